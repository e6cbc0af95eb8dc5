package io.phxfs.kvcache;

import io.phxfs.kvcache.PromptChunks.Chunk;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.LongAdder;

/**
 * A retrieve's way out of the tiers: the held prefix's chunks fetched in parallel on the
 * engine's I/O threads, verified by the tier that had them, and promoted into the memory tier.
 * Owns nothing: the engine owns the executor and the staging pool.
 */
final class RetrievePath {
    private final KvLayout layout;
    private final PromptChunks chunks;
    private final TierStack tiers;
    private final MemoryTier memory;
    private final List<KvTier> lower;
    private final ExecutorService io;
    private final StagingPool staging;
    private final LongAdder retrieved;
    private final LongAdder promotions;

    RetrievePath(KvLayout layout, PromptChunks chunks, TierStack tiers, ExecutorService io, StagingPool staging,
                 EngineCounters counters) {
        this.layout = layout;
        this.chunks = chunks;
        this.tiers = tiers;
        this.memory = tiers.memory;
        this.lower = tiers.lower;
        this.io = io;
        this.staging = staging;
        this.retrieved = counters.retrieved;
        this.promotions = counters.promotions;
    }

    /** {@link KvCacheEngine#retrieveAsync}, once checked. */
    CompletableFuture<Integer> retrieve(int[] tokens, byte[] extra, KvBuffer dst) {
        List<Chunk> cs = chunks.chunks(tokens, extra, true, tokens.length);
        boolean[] held = tiers.held(cs);
        List<Chunk> want = new ArrayList<>();
        for (Chunk c : cs) {
            if (!held[c.index()]) {
                break;
            }
            want.add(c);
        }
        // chunks the memory tier holds are copied in parallel; those it does not, when they go
        // straight into host memory, are read from the disk tier together (its reads of many
        // chunks in flight at once, as one large read has them: chunk by chunk, the disk idled
        // between chunks), and what the disk lacks is fetched from the tiers below, in parallel.
        // Without a disk tier the Redis tier takes that place: its GETs of all those chunks are
        // pipelined, across a cluster's shards at once, instead of one round trip per chunk
        KvTier first = lower.isEmpty() ? null : lower.getFirst();
        List<MemorySegment> views = first == null ? null : hostViews(want, dst);
        List<Integer> fromDisk = new ArrayList<>();
        List<CompletableFuture<Boolean>> fs = new ArrayList<>(want.size());
        for (int i = 0; i < want.size(); i++) {
            Chunk c = want.get(i);
            boolean inMemory = memory != null && memory.contains(c.key());
            if (views != null && !inMemory) {
                fromDisk.add(i);
                fs.add(null);
            } else {
                fs.add(CompletableFuture.supplyAsync(() -> fetch(c, dst), io));
            }
        }
        if (fromDisk.size() == 1) {
            Chunk c = want.get(fromDisk.get(0));
            fs.set(fromDisk.get(0), CompletableFuture.supplyAsync(() -> fetch(c, dst), io));
        } else if (!fromDisk.isEmpty()) {
            List<KvTier.Get> gets = fromDisk.stream().map(i -> new KvTier.Get(want.get(i).key(), views.get(i))).toList();
            CompletableFuture<boolean[]> read = CompletableFuture.supplyAsync(() -> getAllFrom(first, gets), io);
            List<KvTier> below = lower.subList(1, lower.size());
            for (int j = 0; j < fromDisk.size(); j++) {
                int at = j;
                Chunk c = want.get(fromDisk.get(j));
                MemorySegment v = views.get(fromDisk.get(j));
                fs.set(fromDisk.get(j), read.thenCompose(hit -> {
                    if (hit[at]) {
                        promote(c, v, first);
                        return CompletableFuture.completedFuture(true);
                    }
                    return below.isEmpty() ? CompletableFuture.completedFuture(false)
                            : CompletableFuture.supplyAsync(() -> fetchFrom(below, c, v), io);
                }));
            }
        }
        return CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).thenApply(v -> {
            int n = PromptChunks.prefixTokens(want, fs, false);
            retrieved.add(n);
            return n;
        });
    }

    /** Each chunk's bytes in {@code dst} as a host segment, or null when some have to be staged. */
    private static List<MemorySegment> hostViews(List<Chunk> want, KvBuffer dst) {
        List<MemorySegment> views = new ArrayList<>(want.size());
        for (Chunk c : want) {
            MemorySegment v = dst.hostChunk(c.start(), c.tokens());
            if (v == null) {
                return null;
            }
            views.add(v);
        }
        return views;
    }

    /** A tier's reads of several chunks; a tier that throws is a miss for all of them. */
    private static boolean[] getAllFrom(KvTier t, List<KvTier.Get> gets) {
        try {
            return t.getAll(gets);
        } catch (RuntimeException e) {
            return new boolean[gets.size()];
        }
    }

    private boolean fetchFrom(List<KvTier> below, Chunk c, MemorySegment into) {
        for (KvTier t : below) {
            try {
                if (t.get(c.key(), into)) {
                    promote(c, into, t);
                    return true;
                }
            } catch (RuntimeException e) {
                // a tier that throws is a miss
            }
        }
        return false;
    }

    /** One chunk from the highest tier that has it, verified, promoted into memory. */
    private boolean fetch(Chunk c, KvBuffer dst) {
        long len = layout.bytesPerChunk(c.tokens());
        if (memory != null) {
            try (MemoryTier.Pinned p = memory.pin(c.key())) {
                if (p != null && p.segment().byteSize() == len) {
                    dst.copyIn(p.segment(), c.start(), c.tokens());
                    return true;
                }
            }
        }
        MemorySegment view = dst.hostChunk(c.start(), c.tokens());
        if (view != null) {
            KvTier hit = getLower(c, view);
            if (hit == null) {
                return false;
            }
            promote(c, view, hit);
            return true;
        }
        try (StagingPool.Lease s = staging.take()) {
            MemorySegment seg = s.segment().asSlice(0, len);
            KvTier hit = getLower(c, seg);
            if (hit == null) {
                return false;
            }
            dst.copyIn(seg, c.start(), c.tokens());
            promote(c, seg, hit);
            return true;
        }
    }

    private KvTier getLower(Chunk c, MemorySegment into) {
        for (KvTier t : lower) {
            try {
                if (t.get(c.key(), into)) {
                    return t;
                }
            } catch (RuntimeException e) {
                // a tier that throws is a miss
            }
        }
        return null;
    }

    private void promote(Chunk c, MemorySegment bytes, KvTier from) {
        if (memory != null) {
            MemoryTier.Pinned p = memory.putPinned(c.key(), bytes);
            if (p != null) {
                p.close();
                promotions.increment();
            }
        }
    }
}
