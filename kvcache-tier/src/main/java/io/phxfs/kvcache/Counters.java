package io.phxfs.kvcache;

import java.util.concurrent.atomic.LongAdder;

/** The counters every tier keeps; LongAdder since many threads bump them at once. */
final class Counters {
    final LongAdder hits = new LongAdder();
    final LongAdder misses = new LongAdder();
    final LongAdder bytesRead = new LongAdder();
    final LongAdder bytesWritten = new LongAdder();
    final LongAdder puts = new LongAdder();
    final LongAdder failedPuts = new LongAdder();
    final LongAdder evictions = new LongAdder();
    final LongAdder corrupt = new LongAdder();
    final LongAdder errors = new LongAdder();

    TierStats snapshot(String tier, long entries, long used, long capacity) {
        return new TierStats(tier, hits.sum(), misses.sum(), bytesRead.sum(), bytesWritten.sum(), puts.sum(),
                failedPuts.sum(), entries, used, capacity, evictions.sum(), corrupt.sum(), errors.sum());
    }
}
