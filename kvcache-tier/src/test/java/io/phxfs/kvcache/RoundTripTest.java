package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The real KV cache of tiny-llama for a 600-token prompt (two full chunks and a partial one)
 * through each tier alone and all together, byte-exact, from and into per-layer tensors.
 */
class RoundTripTest {
    @RegisterExtension
    static final RedisServer REDIS = new RedisServer();

    @TempDir
    Path tmp;

    /** Redis outlives each test: keys of a model name of its own start every test empty. */
    private final String model = "tiny-llama-" + System.nanoTime();

    private KvCacheConfig config(String tiers) {
        var b = KvCacheConfig.builder().saveUnfullChunk(true).model(model)
                .localCpu(tiers.contains("memory")).maxLocalCpuBytes(4 << 20);
        if (tiers.contains("disk")) {
            b.localDisk(tmp.resolve("disk")).maxLocalDiskBytes(64 << 20).diskMinFreeBytes(0);
        }
        if (tiers.contains("redis")) {
            b.remoteUrl(REDIS.url());
        }
        return b.build();
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "disk", "redis", "memory+disk+redis"})
    void realKvCacheRoundTripsByteExact(String tiers) throws Exception {
        TestData.KvFixture kv = TestData.kv600();
        assertEquals(600, kv.tokens().length);
        List<RegisteredBuffer> k = TestData.host(kv.keys());
        List<RegisteredBuffer> v = TestData.host(kv.values());
        List<RegisteredBuffer> k2 = TestData.zeroedHost(kv.keys());
        List<RegisteredBuffer> v2 = TestData.zeroedHost(kv.values());
        try (KvCacheEngine engine = new KvCacheEngine(config(tiers), kv.layout())) {
            KvTensors src = KvTensors.of(kv.layout(), k, v, kv.batch(), 0, kv.seq());
            KvTensors dst = KvTensors.of(kv.layout(), k2, v2, kv.batch(), 0, kv.seq());
            assertEquals(0, engine.lookup(kv.tokens()));
            assertEquals(600, engine.storeAsync(kv.tokens(), src).get());
            assertEquals(600, engine.lookup(kv.tokens()));
            assertEquals(600, engine.retrieve(kv.tokens(), dst));
            for (int l = 0; l < kv.layout().layers(); l++) {
                assertArrayEquals(kv.keys().get(l), TestData.bytes(k2.get(l)), "keys of layer " + l);
                assertArrayEquals(kv.values().get(l), TestData.bytes(v2.get(l)), "values of layer " + l);
            }

            // a prompt sharing only the first chunk: the prefix ends after it
            int[] other = kv.tokens().clone();
            other[256] ^= 1;
            assertEquals(256, engine.lookup(other));
            // the same tokens under other extra keys (another LoRA adapter, say) share nothing
            assertEquals(0, engine.lookup(kv.tokens(), new byte[] {1}));
            assertEquals(600, engine.storeAsync(kv.tokens(), new byte[] {1}, src).get());
            assertEquals(600, engine.lookup(kv.tokens(), new byte[] {1}));
            assertEquals(600, engine.retrieve(kv.tokens(), new byte[] {1}, dst));
            // a prompt differing in its first token shares nothing
            int[] none = kv.tokens().clone();
            none[0] ^= 1;
            assertEquals(0, engine.lookup(none));

            KvMetrics m = engine.metrics();
            for (String t : tiers.split("\\+")) {
                TierStats s = m.tier(t);
                assertTrue(s.puts() >= 6, t + " stored the 3 chunks under two keys each: " + s);
                assertEquals(0, s.corrupt());
            }
            assertTrue(m.tier(tiers.split("\\+")[0]).hits() >= 3, m.toString());
        } finally {
            TestData.closeAll(k);
            TestData.closeAll(v);
            TestData.closeAll(k2);
            TestData.closeAll(v2);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"disk", "redis"})
    void aHitBelowIsPromotedIntoMemory(String lowerTier) throws Exception {
        TestData.KvFixture kv = TestData.kv600();
        List<RegisteredBuffer> k = TestData.host(kv.keys());
        List<RegisteredBuffer> v = TestData.host(kv.values());
        try (KvCacheEngine lower = new KvCacheEngine(config(lowerTier), kv.layout())) {
            assertEquals(600, lower.store(kv.tokens(), KvTensors.of(kv.layout(), k, v, 1, 0, 600)));
        }
        List<RegisteredBuffer> k2 = TestData.zeroedHost(kv.keys());
        List<RegisteredBuffer> v2 = TestData.zeroedHost(kv.values());
        try (KvCacheEngine engine = new KvCacheEngine(config("memory+" + lowerTier), kv.layout())) {
            KvTensors dst = KvTensors.of(kv.layout(), k2, v2, 1, 0, 600);
            assertEquals(600, engine.retrieve(kv.tokens(), dst));
            assertEquals(3, engine.metrics().promotions());
            assertTrue(engine.tiers().getFirst().contains(engine.key(
                    new ChunkHasher(256, null).hashes(kv.tokens(), 1)[0])));
            assertEquals(600, engine.retrieve(kv.tokens(), dst));
            assertEquals(3, engine.metrics().tier("memory").hits());
            for (int l = 0; l < kv.layout().layers(); l++) {
                assertArrayEquals(kv.keys().get(l), TestData.bytes(k2.get(l)));
                assertArrayEquals(kv.values().get(l), TestData.bytes(v2.get(l)));
            }
        } finally {
            TestData.closeAll(k);
            TestData.closeAll(v);
            TestData.closeAll(k2);
            TestData.closeAll(v2);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory+disk"})
    void withoutSaveUnfullChunkOnlyFullChunksAreStored(String tiers) throws Exception {
        TestData.KvFixture kv = TestData.kv600();
        List<RegisteredBuffer> k = TestData.host(kv.keys());
        List<RegisteredBuffer> v = TestData.host(kv.values());
        KvCacheConfig c = KvCacheConfig.builder().maxLocalCpuBytes(4 << 20).localDisk(tmp.resolve("d"))
                .diskMinFreeBytes(0).build();
        try (KvCacheEngine engine = new KvCacheEngine(c, kv.layout())) {
            assertEquals(512, engine.store(kv.tokens(), KvTensors.of(kv.layout(), k, v, 1, 0, 600)));
            engine.flush();
            assertEquals(512, engine.lookup(kv.tokens()));
            assertEquals(2, engine.metrics().tier("disk").entries());
            assertFalse(engine.metrics().tier("disk").entries() > 2);
        } finally {
            TestData.closeAll(k);
            TestData.closeAll(v);
        }
    }
}
