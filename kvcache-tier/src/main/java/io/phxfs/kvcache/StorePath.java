package io.phxfs.kvcache;

import io.phxfs.kvcache.PromptChunks.Chunk;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * A store's way into the tiers: into the memory tier at once and below it by the write-behind,
 * or, without a memory tier, straight from the caller's buffer (or a staging copy) into the
 * tiers below on the engine's I/O threads. Owns nothing: the engine owns the executor, the
 * staging pool and the write-behind.
 */
final class StorePath {
    private final KvLayout layout;
    private final PromptChunks chunks;
    private final boolean saveUnfullChunk;
    private final TierStack tiers;
    private final MemoryTier memory;
    private final List<KvTier> lower;
    private final ExecutorService io;
    private final StagingPool staging;
    private final WriteBehind writeBehind;

    StorePath(KvLayout layout, PromptChunks chunks, boolean saveUnfullChunk, TierStack tiers, ExecutorService io,
              StagingPool staging, WriteBehind writeBehind) {
        this.layout = layout;
        this.chunks = chunks;
        this.saveUnfullChunk = saveUnfullChunk;
        this.tiers = tiers;
        this.memory = tiers.memory;
        this.lower = tiers.lower;
        this.io = io;
        this.staging = staging;
        this.writeBehind = writeBehind;
    }

    /** {@link KvCacheEngine#storeAsync} (with {@code waitAll}) and {@link KvCacheEngine#store}, once checked. */
    CompletableFuture<Integer> store(int[] tokens, byte[] extra, KvBuffer src, boolean waitAll) {
        // the positions before the buffer's first are some other buffer's to store
        List<Chunk> cs = chunks.chunks(tokens, extra, saveUnfullChunk, tokens.length).stream()
                .filter(c -> c.start() >= src.firstToken()).toList();
        List<CompletableFuture<Boolean>> done = new ArrayList<>(cs.size());
        if (memory != null) {
            for (Chunk c : cs) {
                CompletableFuture<Boolean> f = storeViaMemory(c, src);
                done.add(f);
                if (!waitAll && f.isDone() && !f.join()) {
                    break;
                }
            }
            if (!waitAll) {
                return CompletableFuture.completedFuture(PromptChunks.prefixTokens(cs, done, true));
            }
        } else if (!storeDirectTogether(cs, src, done)) {
            for (Chunk c : cs) {
                done.add(CompletableFuture.supplyAsync(() -> storeDirect(c, src), io));
            }
        }
        return CompletableFuture.allOf(done.toArray(CompletableFuture[]::new))
                .thenApply(v -> PromptChunks.prefixTokens(cs, done, false));
    }

    /** Into the memory tier now; the future completes when the write-behind has written it below. */
    private CompletableFuture<Boolean> storeViaMemory(Chunk c, KvBuffer src) {
        long len = layout.bytesPerChunk(c.tokens());
        MemoryTier.Pinned p;
        if (memory.contains(c.key()) && tiers.lowerHold(c.key())) {
            return CompletableFuture.completedFuture(true);
        }
        p = memory.putPinned(c.key(), len, slot -> src.copyOut(c.start(), c.tokens(), slot));
        if (p == null) {
            // the pool is full of pinned entries (or closed): write below directly, now
            return CompletableFuture.completedFuture(!lower.isEmpty() && storeDirect(c, src));
        }
        if (lower.isEmpty()) {
            p.close();
            return CompletableFuture.completedFuture(true);
        }
        return writeBehind.enqueue(c, p);
    }

    /**
     * Without the memory tier, from a host buffer: all of the store's chunks go to each lower
     * tier in one {@link KvTier#putAll}, each tier on an I/O thread of its own: the disk tier
     * writes them as one batch, the files synced together; the Redis tier pipelines their SETs
     * (over a cluster's shards at once). False, doing nothing, when the buffer is not host
     * memory (device chunks go through the staging pool, a few at a time) or there is no lower tier.
     */
    private boolean storeDirectTogether(List<Chunk> cs, KvBuffer src, List<CompletableFuture<Boolean>> done) {
        if (lower.isEmpty() || cs.isEmpty()) {
            return false;
        }
        List<KvTier.Put> puts = new ArrayList<>(cs.size());
        for (Chunk c : cs) {
            MemorySegment view = src.hostChunk(c.start(), c.tokens());
            if (view == null) {
                return false;
            }
            puts.add(new KvTier.Put(c.key(), c.tokens(), view));
        }
        List<CompletableFuture<boolean[]>> written = new ArrayList<>(lower.size());
        for (KvTier t : lower) {
            written.add(CompletableFuture.supplyAsync(() -> tiers.safePutAll(t, puts), io));
        }
        for (int i = 0; i < cs.size(); i++) {
            int at = i;
            CompletableFuture<Boolean> f = CompletableFuture.completedFuture(true);
            for (CompletableFuture<boolean[]> w : written) {
                f = f.thenCombine(w, (a, ok) -> a && ok[at]);
            }
            done.add(f);
        }
        return true;
    }

    /** Without the memory tier: straight from the caller's buffer (or a staging copy of it) to every lower tier. */
    private boolean storeDirect(Chunk c, KvBuffer src) {
        MemorySegment view = src.hostChunk(c.start(), c.tokens());
        if (view != null) {
            return putLower(c, view);
        }
        long len = layout.bytesPerChunk(c.tokens());
        try (StagingPool.Lease s = staging.take()) {
            MemorySegment seg = s.segment().asSlice(0, len);
            src.copyOut(c.start(), c.tokens(), seg);
            return putLower(c, seg);
        }
    }

    private boolean putLower(Chunk c, MemorySegment bytes) {
        boolean ok = true;
        for (KvTier t : lower) {
            ok &= tiers.safePut(t, c, bytes);
        }
        return ok;
    }

}
