package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.ZooModel;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Caches over a shared prefix ({@link KvPrefix}, cascade attention) against each sequence with
 * the whole prompt in its own cache: the same logits within float32 rounding, for a prefill
 * piece after the prefix and for decode steps in a batch that mixes two prefixes and a
 * sequence without one, at different lengths. tiny-gemma2 and tiny-gemma3 slide windows of 8
 * over the 32- and 48-position prefixes: rows whose windows start inside a prefix, and rows
 * whose windows start past it.
 */
class SharedPrefixTest {
    private static long[] ids(Random rnd, int n, int vocab) {
        long[] x = new long[n];
        for (int i = 0; i < n; i++) {
            x[i] = rnd.nextInt(vocab);
        }
        return x;
    }

    private static long[] concat(long[] a, long[] b) {
        long[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    private static NDArray[] arrays(NDManager m, CausalLmBlock block, int positions) {
        NDArray[] a = new NDArray[block.layers()];
        for (int i = 0; i < a.length; i++) {
            a[i] = m.zeros(new Shape(block.kvHeads(), positions, block.headDim()), DataType.FLOAT32);
        }
        return a;
    }

    /** The prefix's KV, computed once in a cache of its own and copied out as the shared arrays. */
    private static KvPrefix prefix(NDManager m, CausalLmBlock block, long[] tokens) {
        NDArray[] k = arrays(m, block, tokens.length);
        NDArray[] v = arrays(m, block, tokens.length);
        try (KvCache c = block.newCache(arrays(m, block, tokens.length), arrays(m, block, tokens.length))) {
            block.prefill(m.create(tokens), c, false);
            for (int i = 0; i < k.length; i++) {
                k[i].set(new NDIndex(":"), c.key(i));
                v[i].set(new NDIndex(":"), c.value(i));
            }
        }
        return block.newPrefix(k, v);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama", "tiny-gpt2", "tiny-gemma2", "tiny-gemma3"})
    void sharedPrefixCachesComputeWhatWholeCachesCompute(String fixture) throws Exception {
        try (ZooModel<long[], float[]> model = TestFixtures.zooModel(fixture);
             NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            Random rnd = new Random(7);
            int vocab = block.vocabSize();
            long[] pa = ids(rnd, 48, vocab);
            long[] pb = ids(rnd, 32, vocab);
            KvPrefix a = prefix(m, block, pa);
            KvPrefix b = prefix(m, block, pb);
            assertEquals(48, a.length());
            // rows: two over prefix a, one over b, one without a prefix, suffixes of different lengths
            KvPrefix[] over = {a, a, b, null, a};
            long[][] prompts = {concat(pa, ids(rnd, 5, vocab)), concat(pa, ids(rnd, 11, vocab)), concat(pb, ids(rnd, 3, vocab)),
                    ids(rnd, 9, vocab), concat(pa, ids(rnd, 1, vocab))};
            int rows = prompts.length;
            KvCache[] whole = new KvCache[rows];
            KvCache[] shared = new KvCache[rows];
            for (int r = 0; r < rows; r++) {
                whole[r] = block.newCache(arrays(m, block, 80), arrays(m, block, 80));
                float[] expected = block.prefill(m.create(prompts[r]), whole[r], true).toFloatArray();
                int skip = over[r] == null ? 0 : over[r].length();
                shared[r] = over[r] == null ? block.newCache(arrays(m, block, 40), arrays(m, block, 40))
                        : block.newCache(over[r], arrays(m, block, 40), arrays(m, block, 40));
                assertEquals(skip, shared[r].length());
                long[] rest = java.util.Arrays.copyOfRange(prompts[r], skip, prompts[r].length);
                float[] got = block.prefill(m.create(rest), shared[r], true).toFloatArray();
                float d = TestFixtures.maxDiff(expected, got);
                assertTrue(d < 1e-4, fixture + " row " + r + ": the prefill after a shared prefix differs by " + d);
                assertEquals(prompts[r].length, shared[r].length());
            }
            for (int step = 0; step < 3; step++) {
                long[] next = ids(rnd, rows, vocab);
                NDArray expected = block.decode(m, next, whole);
                NDArray got = block.decode(m, next, shared);
                for (int r = 0; r < rows; r++) {
                    float d = TestFixtures.maxDiff(expected.get(r).toFloatArray(), got.get(r).toFloatArray());
                    assertTrue(d < 1e-4, fixture + " step " + step + " row " + r + ": cascade differs by " + d);
                    assertEquals(whole[r].length(), shared[r].length());
                }
            }
            // a batch of one over a prefix takes the same path
            NDArray one = block.decode(m, new long[] {4}, new KvCache[] {shared[1]});
            NDArray oneWhole = block.decode(m, new long[] {4}, new KvCache[] {whole[1]});
            assertTrue(TestFixtures.maxDiff(one.toFloatArray(), oneWhole.toFloatArray()) < 1e-4);
            // a cache over a prefix never forgets it
            assertThrows(IllegalArgumentException.class, () -> shared[0].setLength(10));
            for (int r = 0; r < rows; r++) {
                whole[r].close();
                shared[r].close();
                shared[r].close();
            }
        }
    }
}
