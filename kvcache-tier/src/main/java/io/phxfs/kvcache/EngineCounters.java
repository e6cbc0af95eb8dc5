package io.phxfs.kvcache;

import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/** The engine's own counters (each tier keeps its {@link Counters}); LongAdder since every request bumps them. */
final class EngineCounters {
    final LongAdder stores = new LongAdder();
    final LongAdder retrieves = new LongAdder();
    final LongAdder lookups = new LongAdder();
    final LongAdder requested = new LongAdder();
    final LongAdder retrieved = new LongAdder();
    final LongAdder promotions = new LongAdder();
    final LongAdder writeFailures = new LongAdder();

    KvMetrics snapshot(List<KvTier> tiers, int queueDepth, int queueCapacity) {
        List<TierStats> ts = tiers.stream().map(KvTier::stats).toList();
        return new KvMetrics(ts, queueDepth, queueCapacity, stores.sum(), retrieves.sum(), lookups.sum(),
                requested.sum(), retrieved.sum(), promotions.sum(), writeFailures.sum());
    }
}
