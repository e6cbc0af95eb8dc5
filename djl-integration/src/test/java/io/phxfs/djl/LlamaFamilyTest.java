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

    static ZooModel<long[], float[][]> load(Path dir) throws Exception {
        return Criteria.builder().setTypes(long[].class, float[][].class).optModelUrls("phoenix://" + dir).build().loadModel();
    }

    /**
     * Tolerance 1e-3 absolute, as for tiny-llama: the two differ in float32 operation order
     * only (transformers' own CPU and CUDA runs differ by 2e-6 on these).
     */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama3", "tiny-llama-bias", "tiny-llama-linear", "tiny-qwen2", "tiny-qwen3", "tiny-mistral",
        "tiny-qwen2-yarn", "tiny-phi3", "tiny-phi3-longrope"})
    void logitsAndGreedyTokensMatchTransformers(String fixture) throws Exception {
        JsonNode ref = TestFixtures.json(fixture + "/expected_logits.json");
        assertLogitsMatch(TestFixtures.file(fixture), ref, fixture);
    }

    /** The rope type's frequencies and cos/sin scale against the ones transformers' rotary embedding held. */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama3", "tiny-llama-bias", "tiny-llama-linear", "tiny-qwen2", "tiny-qwen3", "tiny-mistral",
        "tiny-qwen2-yarn", "tiny-phi3", "tiny-phi3-longrope"})
    void rotaryFrequenciesAndScaleAreTransformers(String fixture) throws Exception {
        JsonNode ref = TestFixtures.json(fixture + "/expected_logits.json");
        HfConfig config = HfConfig.read(TestFixtures.file(fixture));
        int headDim = config.optInteger("head_dim").orElse(config.integer("hidden_size") / config.integer("num_attention_heads"));
        RotaryFrequencies rope = RotaryFrequencies.of(config, headDim, false);
        JsonNode want = ref.get("inv_freq");
        assertEquals(want.size(), rope.invFreq().length);
        for (int i = 0; i < want.size(); i++) {
            float w = want.get(i).floatValue();
            assertEquals(w, rope.invFreq()[i], Math.ulp(w), fixture + " inv_freq[" + i + "]: within an ulp");
        }
        assertEquals(ref.get("attention_scaling").doubleValue(), rope.scaling(), 1e-6, fixture + " attention_scaling");
    }

    /**
     * Published checkpoints' rope settings (Llama 2, CodeLlama, Llama 3.1 and 3.2, Mistral v0.1 and
     * Nemo, Qwen2.5 with and without Qwen's yarn, Qwen3 with yarn) and made-up variants of the
     * paths no published config takes (yarn without truncation, with mscale, with an attention
     * factor, without an original context; transformers 5's layout): the frequencies bit for bit
     * and the scale of cos and sin as transformers 5's rotary embedding computed them from the
     * same config.json (testdata/fixtures/rope/rope_cases.json, scripts/gpu/families_reference.py).
     */
    @Test
    void publishedRopeSettingsGiveTransformersFrequencies(@TempDir Path tmp) throws Exception {
        JsonNode cases = TestFixtures.json("rope/rope_cases.json");
        int n = 0;
        int off = 0;
        int all = 0;
        for (var it = cases.properties().iterator(); it.hasNext(); n++) {
            var c = it.next();
            Path dir = Files.createDirectories(tmp.resolve(c.getKey()));
            JSON.writeValue(dir.resolve("config.json").toFile(), c.getValue().get("config"));
            HfConfig config = HfConfig.read(dir);
            LlamaFamily family = LlamaFamily.of(config);
            int headDim = family.headDim(config, config.integer("hidden_size"), config.integer("num_attention_heads"));
            RotaryFrequencies rope = RotaryFrequencies.of(config, headDim, false);
            JsonNode want = c.getValue().get("inv_freq");
            assertEquals(want.size(), rope.invFreq().length, c.getKey());
            for (int i = 0; i < want.size(); i++) {
                float w = want.get(i).floatValue();
                // torch's vectorised float32 pow is not always correctly rounded: a few ulps either way
                assertEquals(w, rope.invFreq()[i], 4 * Math.ulp(w), c.getKey() + " inv_freq[" + i + "]");
                off += w == rope.invFreq()[i] ? 0 : 1;
                all++;
            }
            assertEquals(c.getValue().get("attention_scaling").doubleValue(), rope.scaling(), 1e-6, c.getKey());
        }
        System.out.printf("rope cases: %d of %d frequencies within 4 ulps of transformers', the rest equal%n", off, all);
        assertTrue(n >= 17, n + " cases");
    }

    /**
     * The last position's logits of a long random sequence (1,000-2,000 tokens), where the scaled
     * frequencies turn through many cycles: a frequency off by an ulp, or a band edge misplaced,
     * shows here and not in 16 positions.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama3", "tiny-qwen2-yarn", "tiny-qwen3", "tiny-phi3-longrope"})
    void longSequencesLastLogitsMatchTransformers(String fixture) throws Exception {
        JsonNode ref = TestFixtures.json(fixture + "/expected_long.json");
        long[] ids = TestFixtures.longs(ref.get("input_ids"));
        float[] want = new float[ref.get("last_logits").size()];
        for (int i = 0; i < want.length; i++) {
            want[i] = ref.get("last_logits").get(i).floatValue();
        }
        try (ZooModel<long[], float[][]> model = load(TestFixtures.file(fixture)); NDManager m = model.getNDManager().newSubManager()) {
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            float[] all = block.logits(m.create(ids), null).toFloatArray();
            float[] last = java.util.Arrays.copyOfRange(all, all.length - want.length, all.length);
            double err = 0;
            for (int i = 0; i < want.length; i++) {
                err = Math.max(err, Math.abs(want[i] - last[i]));
            }
            System.out.printf("%s, %d tokens: last logits max abs error %.3g vs transformers%n", fixture, ids.length, err);
            assertTrue(err <= 1e-3, fixture + ": " + err);
        }
    }

    static void assertLogitsMatch(Path dir, JsonNode ref, String what) throws Exception {
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
    void aSlidingWindowIsComputedNotACapOnTheContext() throws Exception {
        try (ZooModel<long[], float[][]> model = load(TestFixtures.file("tiny-mistral"))) {
            LlamaBlock block = (LlamaBlock) model.getBlock();
            assertEquals(1024, block.contextLength(), "max_position_embeddings, past sliding_window 32");
            for (AttentionKind k : block.attentionKinds()) {
                assertEquals(32, k.window(), "every Mistral layer slides");
            }
        }
    }

    /** MistralConfig has no layer_types: transformers slides every layer whatever a config lists there. */
    @Test
    void mistralSlidesEveryLayerWhateverLayerTypesSay(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-mistral", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        c.set("layer_types", JSON.createArrayNode().add("full_attention").add("full_attention"));
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertArrayEquals(new int[] {32, 32}, windows(model));
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
            assertArrayEquals(new int[] {0, 0}, windows(model));
        }
        c.put("use_sliding_window", true);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertArrayEquals(new int[] {0, 0}, windows(model), "max_window_layers defaults to 28: no layer of 2 slides");
        }
        c.put("max_window_layers", 1);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertEquals(1024, ((LlamaBlock) model.getBlock()).contextLength());
            assertArrayEquals(new int[] {0, 16}, windows(model), "layers from max_window_layers on slide");
        }
        c.set("layer_types", JSON.createArrayNode().add("sliding_attention").add("full_attention"));
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertArrayEquals(new int[] {16, 0}, windows(model), "layer_types decide where a config has them");
        }
        c.put("use_sliding_window", false);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> load(dir).close());
        assertTrue(none.getMessage().contains("layer_types[0] is sliding_attention but the config has no window"),
                none.getMessage());
        c.put("use_sliding_window", true);
        c.set("layer_types", JSON.createArrayNode().add("sliding_attention").add("chunked_attention"));
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> load(dir).close());
        assertTrue(e.getMessage().contains("layer_types[1] is chunked_attention"), e.getMessage());
    }

    private static int[] windows(ZooModel<long[], float[][]> model) {
        return java.util.Arrays.stream(((LlamaBlock) model.getBlock()).attentionKinds()).mapToInt(AttentionKind::window).toArray();
    }

    /** Rope types whose angles depend on the sequence would give other logits if computed as another type. */
    @ParameterizedTest
    @ValueSource(strings = {"su", "mrope", "default_2"})
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
        c.put("model_type", "falcon");
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        String msg = rootMessage(assertThrows(Exception.class, () -> load(dir).close()));
        assertTrue(msg.contains("model_type \"falcon\" is not supported (gemma, gemma2, gemma3, gemma3_text, gpt2, llama, mistral, phi3,"
                + " qwen2, qwen3)"), msg);
    }

    /** Dynamic NTK keeps the default frequencies up to the original context, so the block computes up to there. */
    @Test
    void dynamicRopeIsTheDefaultOneUpToItsOriginalContext(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-llama-linear", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        ((ObjectNode) c.get("rope_parameters")).put("rope_type", "dynamic").put("original_max_position_embeddings", 40);
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir); NDManager m = model.getNDManager().newSubManager()) {
            LlamaBlock block = (LlamaBlock) model.getBlock();
            assertEquals(40, block.contextLength());
            String msg = assertThrows(IllegalArgumentException.class, () -> block.logits(m.create(new long[41]), null)).getMessage();
            assertTrue(msg.contains("has original_max_position_embeddings 40 with a rope type whose frequencies change"), msg);
        }
    }

    /** longrope's short factors hold up to the original context; past it transformers switches to the long ones. */
    @Test
    void longropeIsComputedUpToItsOriginalContext() throws Exception {
        try (ZooModel<long[], float[][]> model = load(TestFixtures.file("tiny-phi3-longrope"));
             NDManager m = model.getNDManager().newSubManager()) {
            LlamaBlock block = (LlamaBlock) model.getBlock();
            assertEquals(64, block.contextLength(), "original_max_position_embeddings 64 of max_position_embeddings 256");
            String msg = assertThrows(IllegalArgumentException.class, () -> block.logits(m.create(new long[65]), null)).getMessage();
            assertTrue(msg.contains("original_max_position_embeddings 64"), msg);
        }
    }

    @Test
    void ropeSettingsTheBlockDoesNotComputeAreRefusedNamingTheField(@TempDir Path tmp) throws Exception {
        String[][] cases = {
            {"{\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}}",
                "rope_parameters.full_attention: rope settings per layer type are not supported"},
            {"{\"rope_type\": \"default\", \"rope_theta\": 10000.0, \"partial_rotary_factor\": 0.1875}",
                "rope_parameters.partial_rotary_factor 0.1875 is not supported: it must rotate an even number"},
            {"{\"rope_type\": \"longrope\", \"rope_theta\": 10000.0, \"short_factor\": [1.0, 2.0], \"long_factor\": [1.0]}",
                "rope_parameters.short_factor must be a list of 8 numbers"},
        };
        for (String[] k : cases) {
            Path dir = copy("tiny-llama-linear", tmp.resolve("c" + k[1].hashCode()));
            ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
            c.set("rope_parameters", JSON.readTree(k[0]));
            JSON.writeValue(dir.resolve("config.json").toFile(), c);
            String msg = rootMessage(assertThrows(Exception.class, () -> load(dir).close()));
            assertTrue(msg.contains(k[1]), msg);
        }
    }

    /** transformers 5 lets a top-level original_max_position_embeddings override the rope object's. */
    @Test
    void aTopLevelOriginalContextOverridesTheRopeObjects(@TempDir Path tmp) throws Exception {
        JsonNode llama31 = TestFixtures.json("rope/rope_cases.json").get("llama-3.1-8b");
        ObjectNode c = llama31.get("config").deepCopy();
        ((ObjectNode) c.get("rope_scaling")).put("original_max_position_embeddings", 1234);
        c.put("original_max_position_embeddings", 8192);
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        float[] inv = RotaryFrequencies.of(HfConfig.read(tmp), 128, false).invFreq();
        for (int i = 0; i < inv.length; i++) {
            assertEquals(llama31.get("inv_freq").get(i).floatValue(), inv[i], 0f, "inv_freq[" + i + "]");
        }
    }

    /** Defaults of an absent field as transformers' config classes have them, where they differ by model type. */
    @Test
    void absentFieldsTakeTheirModelTypesDefaults(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-mistral", tmp);
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        c.put("max_position_embeddings", 8192);
        c.remove("sliding_window");
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertArrayEquals(new int[] {4096, 4096}, windows(model), "MistralConfig's sliding_window defaults to 4096");
        }
        c.putNull("sliding_window");
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        try (ZooModel<long[], float[][]> model = load(dir)) {
            assertArrayEquals(new int[] {0, 0}, windows(model), "null turns the window off");
        }
        ObjectNode q = JSON.createObjectNode().put("model_type", "qwen3").put("hidden_size", 1024).put("num_attention_heads", 16);
        JSON.writeValue(tmp.resolve("config.json").toFile(), q);
        HfConfig qc = HfConfig.read(tmp);
        LlamaFamily qwen3 = LlamaFamily.of(qc);
        assertEquals(128, qwen3.headDim(qc, 1024, 16), "Qwen3Config's head_dim defaults to 128, not hidden / heads");
        assertEquals(32, qwen3.kvHeads(qc, 16), "Qwen3Config's num_key_value_heads defaults to 32");
        q.put("model_type", "mistral");
        JSON.writeValue(tmp.resolve("config.json").toFile(), q);
        HfConfig mc = HfConfig.read(tmp);
        assertEquals(8, LlamaFamily.of(mc).kvHeads(mc, 16));
        assertEquals(64, LlamaFamily.of(mc).headDim(mc, 1024, 16));
    }

    /** Quantized weights read as plain floats would give wrong logits: refused, naming the field or the tensor. */
    @Test
    void quantizedCheckpointsAreRefused(@TempDir Path tmp) throws Exception {
        Path dir = copy("tiny-qwen2", tmp.resolve("config"));
        ObjectNode c = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        c.set("quantization_config", JSON.readTree("{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}"));
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        String msg = rootMessage(assertThrows(Exception.class, () -> load(dir).close()));
        assertTrue(msg.contains("\"quantization_config\" is set: quantized checkpoints are not supported"), msg);
        // an integer weight without a config saying so: the tensor's dtype refuses it
        Path ints = copy("tiny-qwen2", tmp.resolve("tensor"));
        retype(ints.resolve("model.safetensors"), "model.layers.0.mlp.up_proj.weight", "I16");
        msg = rootMessage(assertThrows(Exception.class, () -> load(ints).close()));
        assertTrue(msg.contains("tensor \"model.layers.0.mlp.up_proj.weight\" is int16"), msg);
    }

    /** Rewrites one tensor's dtype in a safetensors header to another of the same width, the header padded to its length. */
    private static void retype(Path file, String tensor, String dtype) throws Exception {
        byte[] b = Files.readAllBytes(file);
        int n = (int) java.nio.ByteBuffer.wrap(b, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
        ObjectNode h = (ObjectNode) JSON.readTree(new String(b, 8, n, java.nio.charset.StandardCharsets.UTF_8));
        ((ObjectNode) h.get(tensor)).put("dtype", dtype);
        byte[] json = JSON.writeValueAsBytes(h);
        assertTrue(json.length <= n);
        byte[] padded = new byte[n];
        java.util.Arrays.fill(padded, (byte) ' ');
        System.arraycopy(json, 0, padded, 0, json.length);
        System.arraycopy(padded, 0, b, 8, n);
        Files.write(file, b);
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
