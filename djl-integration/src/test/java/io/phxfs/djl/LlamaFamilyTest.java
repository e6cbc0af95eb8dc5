package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Llama family's members against transformers: tiny checkpoints written by transformers 5.17
 * with every parameter random (biases and norm weights included), and the logits its float32
 * forward computes over their bf16 weights ({@code scripts/gpu/families_reference.py}).
 */
class LlamaFamilyTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ZooModel<long[], float[][]> load(Path dir) throws Exception {
        return Criteria.builder().setTypes(long[].class, float[][].class).optModelUrls("phoenix://" + dir).build().loadModel();
    }

    /**
     * Tolerance 1e-3 absolute, as for tiny-llama: the two differ in float32 operation order
     * only (transformers' own CPU and CUDA runs differ by 2e-6 on these).
     */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama3", "tiny-llama-bias", "tiny-llama-linear", "tiny-qwen2", "tiny-qwen3", "tiny-mistral",
        "tiny-qwen2-yarn"})
    void logitsAndGreedyTokensMatchTransformers(String fixture) throws Exception {
        JsonNode ref = TestFixtures.json(fixture + "/expected_logits.json");
        assertLogitsMatch(TestFixtures.file(fixture), ref, fixture);
    }

    /** The rope type's frequencies and cos/sin scale against the ones transformers' rotary embedding held. */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama3", "tiny-llama-bias", "tiny-llama-linear", "tiny-qwen2", "tiny-qwen3", "tiny-mistral",
        "tiny-qwen2-yarn"})
    void rotaryFrequenciesAndScaleAreTransformers(String fixture) throws Exception {
        JsonNode ref = TestFixtures.json(fixture + "/expected_logits.json");
        HfConfig config = HfConfig.read(TestFixtures.file(fixture));
        int headDim = config.optInteger("head_dim").orElse(config.integer("hidden_size") / config.integer("num_attention_heads"));
        RotaryFrequencies rope = RotaryFrequencies.of(config, headDim, false);
        JsonNode want = ref.get("inv_freq");
        assertEquals(want.size(), rope.invFreq().length);
        for (int i = 0; i < want.size(); i++) {
            float w = want.get(i).floatValue();
            assertEquals(w, rope.invFreq()[i], Math.abs(w) * 2e-7, fixture + " inv_freq[" + i + "]");
        }
        assertEquals(ref.get("attention_scaling").doubleValue(), rope.scaling(), 1e-6, fixture + " attention_scaling");
    }

    private static void assertLogitsMatch(Path dir, JsonNode ref, String what) throws Exception {
        long[] ids = TestFixtures.longs(ref.get("input_ids").get(0));
        try (ZooModel<long[], float[][]> model = load(dir); ai.djl.inference.Predictor<long[], float[][]> p = model.newPredictor()) {
            double err = Gpt2ZooTest.maxAbsDiff(TestFixtures.rows(ref.get("logits")), p.predict(ids));
            System.out.printf("%s logits: max abs error %.3g vs transformers%n", what, err);
            assertTrue(err <= 1e-3, what + ": max abs error " + err);
            Greedy g = Greedy.of(model);
            assertArrayEquals(TestFixtures.longs(ref.get("generate_8_greedy")), g.generate(ids, 8, true).tokens(), what);
            assertArrayEquals(TestFixtures.longs(ref.get("generate_8_greedy_no_cache")), g.generate(ids, 8, false).tokens(), what);
        }
    }

    /** Checkpoints written by transformers 4 (most of the Hub's) keep the rope settings in rope_scaling and rope_theta. */
    @Test
    void llama3FrequenciesReadFromTransformers4sLayoutGiveTheSameLogits(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-llama3", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        ObjectNode rope = (ObjectNode) c.remove("rope_parameters");
        c.set("rope_theta", rope.remove("rope_theta"));
        c.set("rope_scaling", rope);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        assertLogitsMatch(dir, TestFixtures.json("tiny-llama3/expected_logits.json"), "tiny-llama3 (transformers 4 layout)");
    }

    @Test
    void aSlidingWindowBoundsTheContextAndAPromptPastItIsRefusedNamingTheWindow() throws Exception {
        try (ZooModel<long[], float[][]> model = load(TestFixtures.file("tiny-mistral"));
             NDManager m = model.getNDManager().newSubManager()) {
            LlamaBlock block = (LlamaBlock) model.getBlock();
            assertEquals(32, block.contextLength(), "sliding_window 32 below max_position_embeddings 1024");
            block.logits(m.create(new long[32]), null);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> block.logits(m.create(new long[33]), null));
            assertTrue(e.getMessage().contains("sliding_window 32"), e.getMessage());
        }
    }

    /** Qwen2.5's configs on the Hub carry sliding_window with use_sliding_window false: full attention, the whole context. */
    @Test
    void aWindowThatIsNotUsedLeavesTheWholeContext(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-qwen2", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        c.remove("layer_types");
        c.put("sliding_window", 16);
        c.put("use_sliding_window", false);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertEquals(1024, ((LlamaBlock) model.getBlock()).contextLength());
        }
        c.put("use_sliding_window", true);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertEquals(16, ((LlamaBlock) model.getBlock()).contextLength());
        }
    }

    /** Rope types whose angles depend on the sequence would give other logits if computed as another type. */
    @ParameterizedTest
    @ValueSource(strings = {"dynamic", "longrope", "su"})
    void anUnsupportedRopeTypeIsRefusedNamingTheField(String type, @TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-llama-linear", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        ((ObjectNode) c.get("rope_parameters")).put("rope_type", type);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        Exception e = assertThrows(Exception.class, () -> load(dir).close());
        String msg = rootMessage(e);
        assertTrue(msg.contains("rope_parameters.rope_type \"" + type + "\" is not supported"), msg);
        assertTrue(msg.contains("config.json"), msg);
    }

    @Test
    void llama3WithoutItsFactorsIsRefusedNamingTheMissingOne(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-llama3", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        ((ObjectNode) c.get("rope_parameters")).remove("original_max_position_embeddings");
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        String msg = rootMessage(assertThrows(Exception.class, () -> load(dir).close()));
        assertTrue(msg.contains("rope_parameters.original_max_position_embeddings is missing"), msg);
    }

    @Test
    void anotherModelTypeIsRefusedListingTheSupportedOnes(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-qwen3", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        c.put("model_type", "gemma2");
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        String msg = rootMessage(assertThrows(Exception.class, () -> load(dir).close()));
        assertTrue(msg.contains("model_type \"gemma2\" is not supported (gpt2, llama, mistral, qwen2, qwen3)"), msg);
    }

    private static String rootMessage(Throwable e) {
        while (e.getCause() != null) {
            e = e.getCause();
        }
        return e.getMessage();
    }

    private static Path copy(String fixture, Path tmp) throws Exception {
        Path dir = tmp.resolve(fixture);
        Files.createDirectories(dir);
        try (var files = Files.list(TestFixtures.file(fixture))) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        return dir;
    }
}
