package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Redis server goes away in the middle of a run and comes back: meanwhile every call is a
 * miss or a failed store, never an exception to the caller; afterwards stores and hits resume.
 */
class RedisRestartTest {
    @RegisterExtension
    static final RedisServer REDIS = new RedisServer();

    private static final KvLayout L = KvLayout.preset("tiny-llama");
    private static final int CHUNK = 256;

    @Test
    void serverStoppedAndRestartedMidRun() throws Exception {
        KvCacheConfig c = KvCacheConfig.builder().localCpu(false).remoteUrl(REDIS.url())
                .remoteTimeout(Duration.ofMillis(500)).model("restart").build();
        long len = L.bytesPerChunk(2 * CHUNK);
        try (KvCacheEngine e = new KvCacheEngine(c, L);
             RegisteredBuffer src = TestData.PHX.host().allocate(len);
             RegisteredBuffer dst = TestData.PHX.host().allocate(len)) {
            int[] p = TestData.tokens(2 * CHUNK, 5);
            for (int i = 0; i < 2; i++) {
                TestData.fill(src.segment().orElseThrow().asSlice(i * len / 2, len / 2), TestData.seedOf(p, i, CHUNK));
            }
            ChunkedKv in = new ChunkedKv(src, L, CHUNK);
            ChunkedKv out = new ChunkedKv(dst, L, CHUNK);
            assertEquals(512, e.store(p, in));
            assertEquals(512, e.retrieve(p, out));
            assertEquals(-1, dst.segment().orElseThrow().mismatch(src.segment().orElseThrow()));

            REDIS.stop();
            long end = System.nanoTime() + 1_500_000_000L;
            int calls = 0;
            while (System.nanoTime() < end) {
                assertEquals(0, e.lookup(p));
                assertEquals(0, e.retrieve(p, out));
                assertEquals(0, e.store(p, in));
                calls++;
            }
            long errors = e.metrics().tier("redis").errors();
            System.err.println("RedisRestartTest: " + calls + " rounds while the server was away, " + errors + " errors counted");
            assertTrue(errors > 0);

            REDIS.start();
            long deadline = System.nanoTime() + 20_000_000_000L;
            int stored = 0;
            while (stored == 0 && System.nanoTime() < deadline) {
                stored = e.store(p, in);
                if (stored == 0) {
                    Thread.sleep(50);
                }
            }
            assertEquals(512, stored, "stores resume once the server is back");
            dst.segment().orElseThrow().fill((byte) 0);
            assertEquals(512, e.retrieve(p, out));
            assertEquals(-1, dst.segment().orElseThrow().mismatch(src.segment().orElseThrow()));
        }
    }
}
