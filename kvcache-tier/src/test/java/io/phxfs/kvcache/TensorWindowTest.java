package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Tensors that start past a prefix kept elsewhere ({@link KvTensors#of(KvLayout, List, List, int,
 * int, int, int)}, a serving engine's cache after a shared block): a store takes only the chunks
 * from their first position on (the ones before are another buffer's), what it stores reads
 * back byte-exact into whole tensors, and the window refuses positions before its first.
 */
class TensorWindowTest {
    /** Positions [first, seq) of each tensor {@code [1, heads, seq, d]} as {@code [1, heads, seq - first, d]}. */
    private static List<byte[]> window(List<byte[]> whole, KvLayout layout, int seq, int first) {
        int row = (int) layout.rowBytes();
        int n = seq - first;
        List<byte[]> out = new ArrayList<>();
        for (byte[] t : whole) {
            byte[] w = new byte[layout.kvHeads() * n * row];
            for (int h = 0; h < layout.kvHeads(); h++) {
                System.arraycopy(t, (h * seq + first) * row, w, h * n * row, n * row);
            }
            out.add(w);
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "disk"})
    void aStoreFromAWindowSkipsThePrefixAndReadsBackByteExact(String tier) throws Exception {
        TestData.KvFixture kv = TestData.kv600();
        KvLayout layout = kv.layout();
        int first = 256;
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("kv-window");
        KvCacheConfig config = tier.equals("memory") ? KvCacheConfig.builder().saveUnfullChunk(true).localCpu(true).maxLocalCpuBytes(64L << 20).build()
                : KvCacheConfig.builder().saveUnfullChunk(true).localCpu(false).localDisk(dir).maxLocalDiskBytes(64L << 20).diskMinFreeBytes(0).build();
        List<RegisteredBuffer> k = TestData.host(kv.keys());
        List<RegisteredBuffer> v = TestData.host(kv.values());
        List<RegisteredBuffer> wk = TestData.host(window(kv.keys(), layout, kv.seq(), first));
        List<RegisteredBuffer> wv = TestData.host(window(kv.values(), layout, kv.seq(), first));
        List<RegisteredBuffer> k2 = TestData.zeroedHost(kv.keys());
        List<RegisteredBuffer> v2 = TestData.zeroedHost(kv.values());
        try (KvCacheEngine engine = new KvCacheEngine(config, layout)) {
            KvTensors win = KvTensors.of(layout, wk, wv, 1, 0, kv.seq() - first, first);
            assertEquals(kv.seq(), win.capacityTokens(), "the window reaches the prompt's position 600");
            assertTrue(win.toString().contains("from position 256"), win.toString());
            // the prefix's chunk from the whole tensors, the rest from the window
            assertEquals(256, engine.store(Arrays.copyOf(kv.tokens(), 256), KvTensors.of(layout, k, v, 1, 0, kv.seq())));
            engine.storeAsync(kv.tokens(), win).get();
            assertEquals(kv.seq(), engine.lookup(kv.tokens()), "chunks after the prefix were stored from the window");
            assertEquals(kv.seq(), engine.retrieve(kv.tokens(), KvTensors.of(layout, k2, v2, 1, 0, kv.seq())));
            for (int l = 0; l < layout.layers(); l++) {
                assertArrayEquals(kv.keys().get(l), TestData.bytes(k2.get(l)), "keys of layer " + l);
                assertArrayEquals(kv.values().get(l), TestData.bytes(v2.get(l)), "values of layer " + l);
            }
            // positions before the window's first are not in it
            assertThrows(IllegalArgumentException.class, () -> win.copyOut(0, 256, java.lang.foreign.Arena.ofAuto()
                    .allocate(layout.bytesPerChunk(256))));
            assertThrows(IllegalArgumentException.class, () -> KvTensors.of(layout, wk, wv, 1, 0, 10, -1));
        } finally {
            for (List<RegisteredBuffer> b : List.of(k, v, wk, wv, k2, v2)) {
                TestData.closeAll(b);
            }
        }
    }

    @org.junit.jupiter.api.Test
    void aWindowAloneStoresNothingBeforeItsFirstPosition() throws Exception {
        TestData.KvFixture kv = TestData.kv600();
        KvLayout layout = kv.layout();
        List<RegisteredBuffer> wk = TestData.host(window(kv.keys(), layout, kv.seq(), 512));
        List<RegisteredBuffer> wv = TestData.host(window(kv.values(), layout, kv.seq(), 512));
        try (KvCacheEngine engine = new KvCacheEngine(KvCacheConfig.builder().saveUnfullChunk(true).localCpu(true).maxLocalCpuBytes(64L << 20).build(),
                layout)) {
            engine.storeAsync(kv.tokens(), KvTensors.of(layout, wk, wv, 1, 0, kv.seq() - 512, 512)).get();
            // only the chunk from 512 went in: without the chunks before it, a lookup finds nothing
            assertEquals(0, engine.lookup(kv.tokens()));
            assertEquals(1, engine.metrics().tier("memory").entries(), engine.metrics().toString());
        } finally {
            TestData.closeAll(wk);
            TestData.closeAll(wv);
        }
    }
}
