package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * tiny-gpt2 through DJL's Criteria: by model path with the block factory named, by phoenix: URL,
 * by the phoenix zoo, single and sharded, against the logits transformers computed.
 */
class Gpt2ZooTest {
    private static final double TOLERANCE = 1e-4;

    static long[] ids() {
        return TestFixtures.longs(TestFixtures.json("tiny-gpt2/expected_logits.json").get("input_ids").get(0));
    }

    static float[][] expected() {
        return TestFixtures.rows(TestFixtures.json("tiny-gpt2/expected_logits.json").get("logits"));
    }

    static double maxAbsDiff(float[][] a, float[][] b) {
        assertEquals(a.length, b.length, "rows");
        double max = 0;
        for (int i = 0; i < a.length; i++) {
            assertEquals(a[i].length, b[i].length, "row " + i);
            for (int j = 0; j < a[i].length; j++) {
                max = Math.max(max, Math.abs(a[i][j] - b[i][j]));
            }
        }
        return max;
    }

    private static float[][] logits(Criteria<long[], float[][]> criteria) throws Exception {
        try (ZooModel<long[], float[][]> model = criteria.loadModel();
             Predictor<long[], float[][]> p = model.newPredictor()) {
            assertInstanceOf(Gpt2Block.class, model.getBlock());
            return p.predict(ids());
        }
    }

    @Test
    void modelPathWithTheBlockFactoryReproducesTransformers() throws Exception {
        Criteria<long[], float[][]> c = Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelPath(TestFixtures.file("tiny-gpt2")).optEngine(DjlRuntime.ENGINE)
                .optArgument("blockFactory", PhoenixBlockFactory.class.getName())
                .optOption("hasParameter", "false")
                .optTranslatorFactory(new PhoenixTranslatorFactory()).build();
        double err = maxAbsDiff(expected(), logits(c));
        assertTrue(err <= TOLERANCE, "max abs error " + err);
    }

    @Test
    void phoenixUrlSingleAndShardedGiveTheSameLogits() throws Exception {
        for (String dir : new String[] {"tiny-gpt2", "tiny-gpt2-sharded"}) {
            Criteria<long[], float[][]> c = Criteria.builder().setTypes(long[].class, float[][].class)
                    .optModelUrls("phoenix://" + TestFixtures.file(dir)).build();
            double err = maxAbsDiff(expected(), logits(c));
            assertTrue(err <= TOLERANCE, dir + ": max abs error " + err);
        }
    }

    @Test
    void anOpaquePhoenixUrlIsAPathRelativeToTheWorkingDirectory() throws Exception {
        Path rel = Path.of("").toAbsolutePath().relativize(TestFixtures.file("tiny-gpt2"));
        Criteria<long[], float[][]> c = Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix:" + rel).build();
        double err = maxAbsDiff(expected(), logits(c));
        assertTrue(err <= TOLERANCE, rel + ": max abs error " + err);
    }

    @Test
    void nextTokenTranslatorGivesTheLastRow() throws Exception {
        Criteria<long[], float[]> c = Criteria.builder().setTypes(long[].class, float[].class)
                .optModelUrls("phoenix://" + TestFixtures.file("tiny-gpt2-sharded")).build();
        try (ZooModel<long[], float[]> model = c.loadModel(); Predictor<long[], float[]> p = model.newPredictor()) {
            float[][] exp = expected();
            double err = maxAbsDiff(new float[][] {exp[exp.length - 1]}, new float[][] {p.predict(ids())});
            assertTrue(err <= TOLERANCE, "max abs error " + err);
        }
    }

    @Test
    void thePhoenixZooListsCheckpointDirectories() throws Exception {
        System.setProperty(PhoenixModelZoo.MODELS_PROPERTY, TestFixtures.dir().toString());
        try {
            Criteria<long[], float[][]> c = Criteria.builder().setTypes(long[].class, float[][].class)
                    .optGroupId(PhoenixModelZoo.GROUP_ID).optArtifactId("tiny-gpt2").build();
            double err = maxAbsDiff(expected(), logits(c));
            assertTrue(err <= TOLERANCE, "max abs error " + err);
        } finally {
            System.clearProperty(PhoenixModelZoo.MODELS_PROPERTY);
        }
    }

    @Test
    void ndListInNdListOut() throws Exception {
        Criteria<NDList, NDList> c = Criteria.builder().setTypes(NDList.class, NDList.class)
                .optModelUrls("phoenix://" + TestFixtures.file("tiny-gpt2")).build();
        try (ZooModel<NDList, NDList> model = c.loadModel(); Predictor<NDList, NDList> p = model.newPredictor();
             NDManager m = model.getNDManager().newSubManager()) {
            NDList out = p.predict(new NDList(m.create(ids())));
            float[] flat = out.head().toFloatArray();
            float[][] exp = expected();
            assertEquals(exp.length * exp[0].length, flat.length);
            assertEquals(exp[3][17], flat[3 * exp[0].length + 17], TOLERANCE);
        }
    }

    @Test
    void closingTheModelReleasesPhoenixMemoryOnceAndAClosedModelRaises() throws Exception {
        Criteria<long[], float[]> c = Criteria.builder().setTypes(long[].class, float[].class)
                .optModelUrls("phoenix://" + TestFixtures.file("tiny-gpt2")).build();
        ZooModel<long[], float[]> model = c.loadModel();
        Gpt2Block block = (Gpt2Block) model.getBlock();
        PhoenixWeights w = block.weights();
        Predictor<long[], float[]> p = model.newPredictor();
        p.predict(ids());
        java.util.List<io.phxfs.core.RegisteredBuffer> buffers = w.loaded().tensors().values().stream()
                .map(t -> t.buffer().orElseThrow()).toList();
        assertEquals(28, buffers.size());
        assertEquals(0, w.releaseCount());
        model.close();
        assertEquals(1, w.releaseCount());
        assertTrue(buffers.stream().allMatch(io.phxfs.core.RegisteredBuffer::isClosed), "every tensor's memory freed");
        model.close();
        w.close();
        assertEquals(1, w.releaseCount(), "released exactly once");
        Exception e = assertThrows(Exception.class, () -> p.predict(ids()));
        Throwable t = e;
        while (t != null && !(t instanceof IllegalStateException)) {
            t = t.getCause();
        }
        assertTrue(t != null && t.getMessage().contains("closed"), "raises IllegalStateException: " + e);
        assertThrows(IllegalStateException.class, block::newCache);
        p.close();
    }

    @Test
    void badInputsFailClearly() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Criteria.builder()
                .setTypes(long[].class, float[].class).optModelUrls("phoenix:///no/such/checkpoint").build().loadModel());
        assertTrue(e.getMessage().contains("/no/such/checkpoint does not exist"), e.getMessage());
        Criteria<long[], float[]> c = Criteria.builder().setTypes(long[].class, float[].class)
                .optModelUrls("phoenix://" + TestFixtures.file("tiny-gpt2")).build();
        try (ZooModel<long[], float[]> model = c.loadModel(); Predictor<long[], float[]> p = model.newPredictor()) {
            Exception x = assertThrows(Exception.class, () -> p.predict(new long[] {1, 512}));
            assertTrue(String.valueOf(rootMessage(x)).contains("token id 512 outside the vocabulary"), rootMessage(x));
            Exception y = assertThrows(Exception.class, () -> p.predict(new long[129]));
            assertTrue(String.valueOf(rootMessage(y)).contains("n_positions 128"), rootMessage(y));
        }
        Path noConfig = TestFixtures.file("dtypes.safetensors").getParent();
        Exception z = assertThrows(Exception.class, () -> Criteria.builder().setTypes(long[].class, float[].class)
                .optModelUrls("phoenix://" + noConfig).build().loadModel());
        assertTrue(String.valueOf(rootMessage(z)).contains("config.json"), rootMessage(z));

        // DJL's loader drops the model it made when the block factory throws: the factory closes it
        ai.djl.Model dropped = ai.djl.Model.newInstance("no-config", ai.djl.Device.cpu(), "PyTorch");
        assertThrows(Exception.class, () -> new PhoenixBlockFactory().newBlock(dropped, noConfig, java.util.Map.of()));
        assertFalse(dropped.getNDManager().isOpen(), "the model the failed block was for is closed");
    }

    @Test
    void unsupportedConfigurationsAreRefusedNamingTheField(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        String config = java.nio.file.Files.readString(TestFixtures.file("tiny-gpt2/config.json"));
        java.nio.file.Files.copy(TestFixtures.file("tiny-gpt2/model.safetensors"), dir.resolve("model.safetensors"));
        String[][] cases = {
            {"\"model_type\": \"gpt2\"", "\"model_type\": \"falcon\"", "model_type \"falcon\" is not supported"},
            {"\"activation_function\": \"gelu_new\"", "\"activation_function\": \"relu\"", "\"activation_function\" relu"},
            {"\"scale_attn_by_inverse_layer_idx\": false", "\"scale_attn_by_inverse_layer_idx\": true",
                "\"scale_attn_by_inverse_layer_idx\" true is not supported"},
            {"\"n_head\": 2", "\"n_head\": 3", "n_embd 64 is not a multiple of n_head 3"},
            {"\"n_layer\": 2", "\"n_layer\": 3", "no tensor \"transformer.h.2.ln_1.weight\""},
        };
        for (String[] c : cases) {
            assertTrue(config.contains(c[0]), c[0]);
            java.nio.file.Files.writeString(dir.resolve("config.json"), config.replace(c[0], c[1]));
            Exception e = assertThrows(Exception.class, () -> Criteria.builder().setTypes(long[].class, float[].class)
                    .optModelUrls("phoenix://" + dir).build().loadModel());
            assertTrue(rootMessage(e).contains(c[2]), c[1] + ": " + rootMessage(e));
        }
    }

    static String rootMessage(Throwable t) {
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getMessage();
    }
}
