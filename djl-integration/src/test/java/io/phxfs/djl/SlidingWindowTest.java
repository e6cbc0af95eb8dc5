package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sliding-window attention (tiny-mistral with its window cut to 8, shorter than the sequences)
 * through every path a sequence takes: the whole forward without a cache, a prefill followed by
 * decode steps, a prefill in pieces, and caches over a shared prefix whose older positions fall
 * out of the window, alone and batched. Each must give the whole forward's logits; and the
 * window's reach is checked exactly: with 2 layers of window 8 a position sees the tokens up to
 * 14 positions back and none before.
 */
class SlidingWindowTest {
    private static final int WINDOW = 8;
    @TempDir
    static Path tmp;
    private static ZooModel<long[], float[][]> model;
    private static LlamaBlock block;
    private static NDManager m;

    @BeforeAll
    static void load() throws Exception {
        Path dir = tmp.resolve("tiny-mistral-w8");
        Files.createDirectories(dir);
        for (String f : new String[] {"model.safetensors", "generation_config.json"}) {
            Files.copy(TestFixtures.file("tiny-mistral/" + f), dir.resolve(f));
        }
        ObjectMapper json = new ObjectMapper();
        ObjectNode c = (ObjectNode) json.readTree(TestFixtures.file("tiny-mistral/config.json").toFile());
        c.put("sliding_window", WINDOW);
        json.writeValue(dir.resolve("config.json").toFile(), c);
        model = Criteria.builder().setTypes(long[].class, float[][].class).optModelUrls("phoenix://" + dir).build().loadModel();
        block = (LlamaBlock) model.getBlock();
        m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
    }

    @AfterAll
    static void close() {
        m.close();
        model.close();
    }

    private static long[] ids(long seed, int n) {
        Random rnd = new Random(seed);
        long[] x = new long[n];
        for (int i = 0; i < n; i++) {
            x[i] = rnd.nextInt(block.vocabSize());
        }
        return x;
    }

    private static float[][] whole(long[] ids) {
        NDArray logits = block.logits(m.create(ids), null);
        float[][] rows = new float[ids.length][];
        for (int t = 0; t < ids.length; t++) {
            rows[t] = logits.get(t).toFloatArray();
        }
        return rows;
    }

    private static NDArray[] arrays(int positions) {
        NDArray[] a = new NDArray[block.layers()];
        for (int i = 0; i < a.length; i++) {
            a[i] = m.zeros(new Shape(block.kvHeads(), positions, block.headDim()), DataType.FLOAT32);
        }
        return a;
    }

    private static void near(float[] expected, float[] got, String what) {
        float d = TestFixtures.maxDiff(expected, got);
        assertTrue(d < 1e-4, what + " differs from the whole forward by " + d);
    }

    @Test
    void aPositionSeesExactlyTheTokensItsLayersWindowsReach() {
        long[] a = ids(1, 40);
        long[] b = a.clone();
        b[0] = (a[0] + 1) % block.vocabSize();
        float[][] la = whole(a);
        float[][] lb = whole(b);
        // layer 1 at position p sees p-7..p; layer 2 reaches p-14 through it
        int reach = block.layers() * (WINDOW - 1);
        for (int p = 0; p < a.length; p++) {
            float d = TestFixtures.maxDiff(la[p], lb[p]);
            if (p <= reach) {
                assertTrue(d > 1e-4, "position " + p + " is within " + reach + " of position 0 yet did not change (" + d + ")");
            } else {
                assertEquals(0f, d, "position " + p + " is past the windows' reach of position 0 yet changed");
            }
        }
    }

    @Test
    void decodeStepsAfterAPrefillGiveTheWholeForwardsLogits() {
        long[] x = ids(2, 40);
        float[][] expected = whole(x);
        try (KvCache growing = block.newCache(); KvCache fixed = block.newCache(arrays(40), arrays(40))) {
            for (KvCache c : new KvCache[] {growing, fixed}) {
                NDArray first = block.prefill(m.create(Arrays.copyOf(x, 10)), c, true);
                near(expected[9], first.toFloatArray(), "the prefill's last logits");
                for (int t = 10; t < x.length; t++) {
                    NDArray step = block.decode(m, new long[] {x[t]}, new KvCache[] {c});
                    near(expected[t], step.get(0).toFloatArray(), "decode at position " + t);
                }
            }
        }
    }

    @Test
    void aPrefillInPiecesGivesTheWholeForwardsLogits() {
        long[] x = ids(3, 40);
        float[][] expected = whole(x);
        try (KvCache c = block.newCache(arrays(40), arrays(40))) {
            for (int from = 0; from < x.length; from += 7) {
                int to = Math.min(x.length, from + 7);
                NDArray last = block.prefill(m.create(Arrays.copyOfRange(x, from, to)), c, true);
                near(expected[to - 1], last.toFloatArray(), "the piece ending at " + (to - 1));
            }
        }
    }

    /** A 20-position prefix: rows whose windows start before it, inside it and past it, in one batch. */
    @Test
    void cachesOverASharedPrefixGiveTheWholeForwardsLogits() {
        long[] prefixIds = ids(4, 20);
        NDArray[] k = arrays(20);
        NDArray[] v = arrays(20);
        try (KvCache c = block.newCache(arrays(20), arrays(20))) {
            block.prefill(m.create(prefixIds), c, false);
            for (int i = 0; i < k.length; i++) {
                k[i].set(new NDIndex(":"), c.key(i));
                v[i].set(new NDIndex(":"), c.value(i));
            }
        }
        KvPrefix prefix = block.newPrefix(k, v);
        int[] suffixes = {1, 3, 12};
        long[][] seq = new long[suffixes.length][];
        KvCache[] caches = new KvCache[suffixes.length];
        try {
            for (int r = 0; r < suffixes.length; r++) {
                long[] rest = ids(10 + r, suffixes[r] + 6);
                seq[r] = new long[20 + rest.length];
                System.arraycopy(prefixIds, 0, seq[r], 0, 20);
                System.arraycopy(rest, 0, seq[r], 20, rest.length);
                caches[r] = block.newCache(prefix, arrays(30), arrays(30));
                float[][] expected = whole(seq[r]);
                NDArray last = block.prefill(m.create(Arrays.copyOf(rest, suffixes[r])), caches[r], true);
                near(expected[20 + suffixes[r] - 1], last.toFloatArray(), "row " + r + "'s prefill after the prefix");
            }
            for (int step = 0; step < 6; step++) {
                long[] next = new long[suffixes.length];
                for (int r = 0; r < next.length; r++) {
                    next[r] = seq[r][20 + suffixes[r] + step];
                }
                NDArray got = block.decode(m, next, caches);
                for (int r = 0; r < next.length; r++) {
                    int position = 20 + suffixes[r] + step;
                    near(whole(Arrays.copyOf(seq[r], position + 1))[position], got.get(r).toFloatArray(),
                            "row " + r + " decode at position " + position);
                }
            }
        } finally {
            for (KvCache c : caches) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    /** Prefill pieces after a prefix, the later ones with windows that start past the whole prefix. */
    @Test
    void prefillPiecesAfterASharedPrefixGiveTheWholeForwardsLogits() {
        long[] x = ids(6, 40);
        float[][] expected = whole(x);
        NDArray[] k = arrays(20);
        NDArray[] v = arrays(20);
        try (KvCache c = block.newCache(arrays(20), arrays(20))) {
            block.prefill(m.create(Arrays.copyOf(x, 20)), c, false);
            for (int i = 0; i < k.length; i++) {
                k[i].set(new NDIndex(":"), c.key(i));
                v[i].set(new NDIndex(":"), c.value(i));
            }
        }
        try (KvCache c = block.newCache(block.newPrefix(k, v), arrays(20), arrays(20))) {
            for (int from = 20; from < x.length; from += 5) {
                NDArray last = block.prefill(m.create(Arrays.copyOfRange(x, from, from + 5)), c, true);
                near(expected[from + 4], last.toFloatArray(), "the piece after the prefix ending at " + (from + 4));
            }
        }
    }
}
