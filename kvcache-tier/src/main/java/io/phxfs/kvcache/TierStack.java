package io.phxfs.kvcache;

import io.phxfs.kvcache.PromptChunks.Chunk;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The engine's tiers, top first: opened together (none left open when one fails), closed
 * together, and asked together which chunks any of them holds. A tier that throws is a miss or
 * a failed put here, never an exception to the engine.
 */
final class TierStack {
    final MemoryTier memory;
    final DiskTier disk;
    final RedisTier redis;
    /** The tiers below memory: disk, then Redis. */
    final List<KvTier> lower;
    final List<KvTier> all;
    private final KvLayout layout;

    /** Opens the tiers the configuration names; on a failure closes those already open and rethrows. */
    TierStack(KvCacheConfig config, KvLayout layout, long chunkBytes) {
        this.layout = layout;
        MemoryTier m = null;
        DiskTier d = null;
        RedisTier r = null;
        try {
            if (config.localCpu()) {
                m = new MemoryTier(config.maxLocalCpuBytes(), chunkBytes);
            }
            if (config.localDisk() != null) {
                d = new DiskTier(config.localDisk(), config.maxLocalDiskBytes(), config.diskMinFreeBytes(), config.fsync());
            }
            if (config.remoteUrl() != null) {
                r = new RedisTier(config);
            }
        } catch (RuntimeException | Error e) {
            for (KvTier t : new KvTier[] {m, d, r}) {
                if (t != null) {
                    t.close();
                }
            }
            throw e;
        }
        this.memory = m;
        this.disk = d;
        this.redis = r;
        List<KvTier> lo = new ArrayList<>();
        if (d != null) {
            lo.add(d);
        }
        if (r != null) {
            lo.add(r);
        }
        this.lower = List.copyOf(lo);
        List<KvTier> a = new ArrayList<>();
        if (m != null) {
            a.add(m);
        }
        a.addAll(lo);
        this.all = List.copyOf(a);
    }

    /**
     * Per chunk, whether some tier holds it, up to the first chunk none does (later ones are
     * false). Reads no payload: a Redis tier is asked once for all the chunks the local tiers lack.
     */
    boolean[] held(List<Chunk> cs) {
        boolean[] held = new boolean[cs.size()];
        List<Integer> remote = new ArrayList<>();
        for (Chunk c : cs) {
            held[c.index()] = memory != null && memory.contains(c.key()) || disk != null && disk.contains(c.key());
            if (!held[c.index()]) {
                if (redis == null) {
                    break; // the prefix ends here
                }
                remote.add(c.index());
            }
        }
        if (redis != null && !remote.isEmpty()) {
            boolean[] r = redis.containsEach(remote.stream().map(i -> cs.get(i).key()).toList());
            for (int i = 0; i < r.length; i++) {
                held[remote.get(i)] = r[i];
            }
        }
        return held;
    }

    boolean lowerHold(CacheKey key) {
        for (KvTier t : lower) {
            if (!(t instanceof RedisTier) && !t.contains(key)) {
                return false;
            }
        }
        return true;
    }

    boolean safePut(KvTier t, Chunk c, MemorySegment bytes) {
        try {
            return t.put(c.key(), layout, c.tokens(), bytes);
        } catch (RuntimeException e) {
            return false;
        }
    }

    boolean[] safePutAll(KvTier t, List<KvTier.Put> puts) {
        try {
            return t.putAll(layout, puts);
        } catch (RuntimeException e) {
            return new boolean[puts.size()];
        }
    }

    /** Closes every tier; each tier's close may be called twice. */
    void close() {
        for (KvTier t : all) {
            t.close();
        }
    }
}
