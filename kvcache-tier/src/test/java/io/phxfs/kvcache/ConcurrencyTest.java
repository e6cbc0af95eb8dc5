package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several threads store and retrieve prompts that share prefixes, through a memory tier small
 * enough to evict, a disk tier and Redis, for a bounded time; every retrieved byte is checked.
 */
class ConcurrencyTest {
    @RegisterExtension
    static final RedisServer REDIS = new RedisServer();

    private static final KvLayout L = new KvLayout(2, 2, 16, KvLayout.DType.BFLOAT16, KvLayout.Kind.KV_2LTD);
    private static final int CHUNK = 64;
    private static final int THREADS = 4;
    private static final long MILLIS = 4000;

    @TempDir
    Path tmp;

    /** Prompt of family f, variant v: chunk 0 shared by all, chunk 1 by the family, the rest its own. */
    private static int[] prompt(int f, int v, int chunks) {
        int[] shared = TestData.tokens(CHUNK, 7);
        int[] fam = TestData.tokens(CHUNK, 100 + f);
        int[] own = TestData.tokens(CHUNK * 6, 1000 + f * 100 + v);
        int[] t = new int[chunks * CHUNK];
        for (int i = 0; i < t.length; i++) {
            t[i] = i < CHUNK ? shared[i] : i < 2 * CHUNK ? fam[i - CHUNK] : own[i - 2 * CHUNK];
        }
        return t;
    }

    @Test
    void overlappingStoresAndRetrievesServeOnlyTheStoredBytes() throws Exception {
        long chunkBytes = L.bytesPerChunk(CHUNK);
        KvCacheConfig c = KvCacheConfig.builder().chunkSize(CHUNK).maxLocalCpuBytes(6 * chunkBytes)
                .localDisk(tmp.resolve("disk")).maxLocalDiskBytes(40 * (chunkBytes + 4096)).diskMinFreeBytes(0)
                .fsync(DiskTier.FsyncPolicy.NONE).remoteUrl(REDIS.url()).writeQueueChunks(8).ioThreads(3)
                .model("conc-" + System.nanoTime()).build();
        AtomicLong verifiedChunks = new AtomicLong();
        AtomicLong stores = new AtomicLong();
        try (KvCacheEngine e = new KvCacheEngine(c, L)) {
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            long end = System.nanoTime() + MILLIS * 1_000_000;
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                long seed = t;
                fs.add(pool.submit(() -> {
                    SplittableRandom r = new SplittableRandom(seed);
                    try (RegisteredBuffer buf = TestData.PHX.host().allocate(8 * chunkBytes);
                         RegisteredBuffer want = TestData.PHX.host().allocate(chunkBytes)) {
                        MemorySegment seg = buf.segment().orElseThrow();
                        ChunkedKv kv = new ChunkedKv(buf, L, CHUNK);
                        while (System.nanoTime() < end) {
                            int[] p = prompt(r.nextInt(3), r.nextInt(4), 2 + r.nextInt(6));
                            if (r.nextInt(3) == 0) {
                                for (int i = 0; i < p.length / CHUNK; i++) {
                                    TestData.fill(seg.asSlice(i * chunkBytes, chunkBytes), TestData.seedOf(p, i, CHUNK));
                                }
                                if (r.nextBoolean()) {
                                    e.store(p, kv);
                                } else {
                                    e.storeAsync(p, kv).join();
                                }
                                stores.incrementAndGet();
                            } else {
                                seg.fill((byte) 0);
                                int n = r.nextBoolean() ? e.retrieve(p, kv) : e.retrieveAsync(p, kv).join();
                                assertEquals(0, n % CHUNK);
                                for (int i = 0; i < n / CHUNK; i++) {
                                    TestData.fill(want.segment().orElseThrow(), TestData.seedOf(p, i, CHUNK));
                                    assertEquals(-1, seg.asSlice(i * chunkBytes, chunkBytes)
                                            .mismatch(want.segment().orElseThrow()), "chunk " + i + " of a prompt");
                                    verifiedChunks.incrementAndGet();
                                }
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
            pool.shutdown();
            KvMetrics m = e.metrics();
            System.err.println("ConcurrencyTest: " + stores + " stores, " + verifiedChunks + " chunks verified; " + m);
            assertTrue(verifiedChunks.get() > 100, "too little checked: " + verifiedChunks);
            assertTrue(m.tier("memory").evictions() > 0, "the memory tier never evicted");
            for (TierStats s : m.tiers()) {
                assertEquals(0, s.corrupt(), s.toString());
            }
        }
    }
}
