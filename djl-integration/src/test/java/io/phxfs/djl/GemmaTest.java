package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.repository.zoo.ZooModel;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Gemma, Gemma 2 and Gemma 3 (text) against transformers: tiny checkpoints written by
 * transformers 5 with every parameter random, the logits of its float32 eager forward
 * ({@code scripts/gpu/gemma_reference.py}), and published Gemma configs as transformers 5 reads
 * them (testdata/fixtures/gemma/gemma_configs.json).
 */
class GemmaTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @ParameterizedTest
    @ValueSource(strings = {"tiny-gemma", "tiny-gemma2", "tiny-gemma3"})
    void logitsAndGreedyTokensMatchTransformers(String fixture) throws Exception {
        LlamaFamilyTest.assertLogitsMatch(TestFixtures.file(fixture), TestFixtures.json(fixture + "/expected_logits.json"), fixture);
    }

    /**
     * 100 positions of Gemma 2 and 3 (windows of 8) and 300 of Mistral (window 32): far past the
     * windows, where a window off by one position, or not applied, changes the last logits.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-gemma2", "tiny-gemma3", "tiny-mistral"})
    void longSequencesPastTheWindowMatchTransformers(String fixture) throws Exception {
        JsonNode ref = TestFixtures.json(fixture + "/expected_long.json");
        long[] ids = TestFixtures.longs(ref.get("input_ids"));
        float[] want = new float[ref.get("last_logits").size()];
        for (int i = 0; i < want.length; i++) {
            want[i] = ref.get("last_logits").get(i).floatValue();
        }
        try (ZooModel<long[], float[][]> model = LlamaFamilyTest.load(TestFixtures.file(fixture));
             NDManager m = model.getNDManager().newSubManager()) {
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            float[] all = block.logits(m.create(ids), null).toFloatArray();
            float err = TestFixtures.maxDiff(want, Arrays.copyOfRange(all, all.length - want.length, all.length));
            System.out.printf("%s, %d tokens: last logits max abs error %.3g vs transformers%n", fixture, ids.length, err);
            assertTrue(err <= 1e-5, fixture + ": " + err);
            // the same through a prefill and decode steps over the cache
            try (KvCache c = block.newCache()) {
                block.prefill(m.create(Arrays.copyOf(ids, ids.length - 5)), c, false);
                NDArray last = null;
                for (int t = ids.length - 5; t < ids.length; t++) {
                    last = block.decode(m, new long[] {ids[t]}, new KvCache[] {c});
                }
                float stepErr = TestFixtures.maxDiff(want, last.toFloatArray());
                assertTrue(stepErr <= 1e-5, fixture + " through the cache: " + stepErr);
            }
        }
    }

    /** Each layer type's rotary frequencies against the buffers transformers' rotary embedding held. */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-gemma", "tiny-gemma2", "tiny-gemma3"})
    void rotaryFrequenciesPerLayerTypeAreTransformers(String fixture) throws Exception {
        JsonNode buffers = TestFixtures.json(fixture + "/expected_logits.json").get("rotary_buffers");
        HfConfig config = HfConfig.read(TestFixtures.file(fixture));
        assertRotary(config, GemmaFamily.of(config), buffers, fixture);
    }

    private static void assertRotary(HfConfig config, GemmaFamily family, JsonNode buffers, String what) {
        assertTrue(buffers.size() > 0, what + ": no rotary buffers recorded");
        for (var it = buffers.properties().iterator(); it.hasNext();) {
            var e = it.next();
            String type = e.getKey().contains("sliding_attention") ? "sliding_attention"
                    : e.getKey().contains("full_attention") ? "full_attention" : null;
            RotaryFrequencies rope = type == null ? RotaryFrequencies.of(config, family.headDim(), false)
                    : RotaryFrequencies.ofLayerType(config, type, family.headDim(), false);
            JsonNode want = e.getValue();
            assertEquals(want.size(), rope.invFreq().length, what + " " + e.getKey());
            for (int i = 0; i < want.size(); i++) {
                float w = want.get(i).floatValue();
                assertEquals(w, rope.invFreq()[i], 4 * Math.ulp(w), what + " " + e.getKey() + "[" + i + "]");
            }
        }
    }

    /**
     * Published configs (gemma-2b, gemma-2-2b-it, gemma-2-27b, gemma-3-1b-it, Gemma 3 4B's
     * text_config and an empty Gemma 3 text config) in transformers 4's layout, as the Hub has
     * them: the block reads the same sizes, layer types, window, scale, softcaps and rotary
     * frequencies per layer type as transformers 5, defaults included.
     */
    @Test
    void publishedConfigsReadAsTransformersReadsThem(@TempDir Path tmp) throws Exception {
        JsonNode cases = TestFixtures.json("gemma/gemma_configs.json");
        int n = 0;
        for (var it = cases.properties().iterator(); it.hasNext(); n++) {
            var c = it.next();
            String name = c.getKey();
            JsonNode read = c.getValue().get("read");
            Path dir = Files.createDirectories(tmp.resolve(name));
            JSON.writeValue(dir.resolve("config.json").toFile(), c.getValue().get("config"));
            HfConfig config = HfConfig.read(dir);
            GemmaFamily f = GemmaFamily.of(config);
            assertEquals(read.get("num_hidden_layers").asInt(), f.layers(), name);
            assertEquals(read.get("hidden_size").asInt(), f.width(), name);
            assertEquals(read.get("num_attention_heads").asInt(), f.heads(), name);
            assertEquals(read.get("num_key_value_heads").asInt(), f.kvHeads(), name);
            assertEquals(read.get("head_dim").asInt(), f.headDim(), name);
            assertEquals(read.get("vocab_size").asInt(), f.vocab(), name);
            assertEquals(read.get("max_position_embeddings").asInt(), f.maxPositions(), name);
            assertEquals(read.get("rms_norm_eps").asDouble(), f.eps(), 0, name);
            if (!read.get("layer_types").isNull()) {
                assertEquals(JSON.convertValue(read.get("layer_types"), java.util.List.class), f.layerTypes(), name);
            }
            for (int i = 0; i < f.layers(); i++) {
                AttentionKind k = f.kinds()[i];
                boolean sliding = f.layerTypes().get(i).equals("sliding_attention");
                assertEquals(sliding ? read.get("sliding_window").asInt() : 0, k.window(), name + " layer " + i);
                double scalar = read.path("query_pre_attn_scalar").isNumber() ? read.get("query_pre_attn_scalar").asDouble()
                        : read.get("head_dim").asDouble();
                assertEquals(Math.pow(scalar, -0.5), k.scale(), 1e-12, name);
                assertEquals(read.path("attn_logit_softcapping").isNumber() ? read.get("attn_logit_softcapping").asDouble() : 0,
                        k.softcap(), 0, name);
            }
            assertEquals(read.path("final_logit_softcapping").isNumber() ? read.get("final_logit_softcapping").asDouble() : 0,
                    f.finalSoftcap(), 0, name);
            assertRotary(config, f, c.getValue().get("rotary_buffers"), name);
        }
        assertTrue(n >= 6, n + " cases");
    }

    @Test
    void aLayerTypeTheBlockDoesNotKnowIsRefusedNamingIt(@TempDir Path tmp) throws Exception {
        ObjectNode c = (ObjectNode) JSON.readTree(TestFixtures.file("tiny-gemma3/config.json").toFile());
        c.set("layer_types", JSON.createArrayNode().add("sliding_attention").add("chunked_attention").add("full_attention")
                .add("sliding_attention"));
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GemmaFamily.of(HfConfig.read(tmp)));
        assertTrue(e.getMessage().contains("layer_types[1] is chunked_attention"), e.getMessage());
        c.put("hidden_activation", "relu");
        c.remove("layer_types");
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        e = assertThrows(IllegalArgumentException.class, () -> GemmaFamily.of(HfConfig.read(tmp)));
        assertTrue(e.getMessage().contains("\"hidden_activation\" relu is not supported"), e.getMessage());
    }

    /** Gemma 2 softcaps by default: a config that nulls the fields turns them off, one that omits them keeps them. */
    @Test
    void gemma2sSoftcapsDefaultOnAndNullTurnsThemOff(@TempDir Path tmp) throws Exception {
        ObjectNode c = (ObjectNode) JSON.readTree(TestFixtures.file("tiny-gemma2/config.json").toFile());
        c.remove("attn_logit_softcapping");
        c.remove("final_logit_softcapping");
        c.remove("layer_types");
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        GemmaFamily f = GemmaFamily.of(HfConfig.read(tmp));
        assertEquals(50.0, f.kinds()[0].softcap());
        assertEquals(30.0, f.finalSoftcap());
        c.putNull("attn_logit_softcapping");
        c.putNull("final_logit_softcapping");
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        f = GemmaFamily.of(HfConfig.read(tmp));
        assertEquals(0, f.kinds()[0].softcap());
        assertEquals(0, f.finalSoftcap());
        assertArrayEquals(new int[] {8, 0, 8}, Arrays.stream(f.kinds()).mapToInt(AttentionKind::window).toArray(),
                "without layer_types Gemma 2 alternates, the first layer sliding");
    }

    /**
     * Gemma 3's multimodal checkpoints (Gemma3ForConditionalGeneration: 4B, 12B, 27B) computed as
     * their text model: tiny-gemma3's tensors under transformers 4's and 5's names for the
     * language model, beside a vision tensor, its config as {@code text_config}: the same logits
     * as the text checkpoint, bit for bit.
     */
    @ParameterizedTest
    @ValueSource(strings = {"language_model.model.", "model.language_model."})
    void aMultimodalGemma3ComputesItsTextModel(String root, @TempDir Path tmp) throws Exception {
        Path text = TestFixtures.file("tiny-gemma3");
        byte[] file = Files.readAllBytes(text.resolve("model.safetensors"));
        long n = java.nio.ByteBuffer.wrap(file, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
        ObjectNode header = (ObjectNode) JSON.readTree(new String(file, 8, (int) n, java.nio.charset.StandardCharsets.UTF_8));
        ObjectNode renamed = JSON.createObjectNode();
        long end = 0;
        for (var it = header.properties().iterator(); it.hasNext();) {
            var e = it.next();
            String name = e.getKey().startsWith("model.") ? root + e.getKey().substring("model.".length()) : e.getKey();
            renamed.set(name, e.getValue());
            if (e.getValue().has("data_offsets")) {
                end = Math.max(end, e.getValue().get("data_offsets").get(1).asLong());
            }
        }
        ObjectNode vision = renamed.putObject("vision_tower.vision_model.embeddings.patch_embedding.weight");
        vision.put("dtype", "F32");
        vision.putArray("shape").add(2).add(2);
        vision.putArray("data_offsets").add(end).add(end + 16);
        byte[] h = JSON.writeValueAsBytes(renamed);
        int padded = (h.length + 7) / 8 * 8;
        Path dir = Files.createDirectories(tmp.resolve("gemma3-mm"));
        try (var out = Files.newOutputStream(dir.resolve("model.safetensors"))) {
            out.write(java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(padded).array());
            out.write(h);
            out.write(" ".repeat(padded - h.length).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.write(file, 8 + (int) n, (int) end);
            out.write(new byte[16]);
        }
        ObjectNode textConfig = (ObjectNode) JSON.readTree(text.resolve("config.json").toFile());
        ObjectNode mm = JSON.createObjectNode();
        mm.put("model_type", "gemma3");
        mm.putArray("architectures").add("Gemma3ForConditionalGeneration");
        mm.set("text_config", textConfig);
        mm.putObject("vision_config").put("model_type", "siglip_vision_model");
        JSON.writeValue(dir.resolve("config.json").toFile(), mm);
        long[] ids = TestFixtures.longs(TestFixtures.json("tiny-gemma3/expected_logits.json").get("input_ids").get(0));
        try (ZooModel<long[], float[][]> a = LlamaFamilyTest.load(text); ZooModel<long[], float[][]> b = LlamaFamilyTest.load(dir);
             var pa = a.newPredictor(); var pb = b.newPredictor()) {
            assertEquals("gemma3_text", ((CausalLmBlock) b.getBlock()).config().modelType());
            PhoenixWeights w = ((CausalLmBlock) b.getBlock()).weights();
            assertTrue(!w.contains("vision_tower.vision_model.embeddings.patch_embedding.weight"), "the vision tower is not read");
            assertTrue(w.contains(root + "embed_tokens.weight"), "the text model is");
            float[][] la = pa.predict(ids);
            float[][] lb = pb.predict(ids);
            for (int t = 0; t < la.length; t++) {
                assertArrayEquals(la[t], lb[t], 0f, "position " + t);
            }
        }
        // the multimodal model never softcaps its logits: a text_config's final cap changes nothing
        textConfig.put("final_logit_softcapping", 0.5);
        JSON.writeValue(dir.resolve("config.json").toFile(), mm);
        try (ZooModel<long[], float[][]> a = LlamaFamilyTest.load(text); ZooModel<long[], float[][]> b = LlamaFamilyTest.load(dir);
             var pa = a.newPredictor(); var pb = b.newPredictor()) {
            assertArrayEquals(pa.predict(ids)[0], pb.predict(ids)[0], 0f, "final_logit_softcapping is not applied");
        }
        textConfig.remove("final_logit_softcapping");
        // the head's tying is the top level's (default true), not text_config's
        textConfig.put("tie_word_embeddings", false);
        JSON.writeValue(dir.resolve("config.json").toFile(), mm);
        LlamaFamilyTest.load(dir).close();
        textConfig.remove("tie_word_embeddings");
        mm.put("tie_word_embeddings", false);
        JSON.writeValue(dir.resolve("config.json").toFile(), mm);
        Exception untied = assertThrows(Exception.class, () -> LlamaFamilyTest.load(dir).close());
        assertTrue(Gpt2ZooTest.rootMessage(untied).contains("lm_head"), "an untied head is read from lm_head: "
                + Gpt2ZooTest.rootMessage(untied));
        mm.remove("tie_word_embeddings");
        textConfig.put("hidden_activation", "relu");
        JSON.writeValue(dir.resolve("config.json").toFile(), mm);
        Exception relu = assertThrows(Exception.class, () -> LlamaFamilyTest.load(dir).close());
        assertTrue(Gpt2ZooTest.rootMessage(relu).contains("\"text_config.hidden_activation\" relu"), Gpt2ZooTest.rootMessage(relu));
        textConfig.remove("hidden_activation");
        // a field of the section is named with it
        textConfig.put("num_hidden_layers", "four");
        JSON.writeValue(dir.resolve("config.json").toFile(), mm);
        Exception e = assertThrows(Exception.class, () -> LlamaFamilyTest.load(dir).close());
        assertTrue(Gpt2ZooTest.rootMessage(e).contains("\"text_config.num_hidden_layers\" is four, not a number"), Gpt2ZooTest.rootMessage(e));
    }

    private static ObjectNode config(String fixture) throws Exception {
        return (ObjectNode) JSON.readTree(TestFixtures.file(fixture + "/config.json").toFile());
    }

    private static GemmaFamily family(ObjectNode c, Path tmp) throws Exception {
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        return GemmaFamily.of(HfConfig.read(tmp));
    }

    /**
     * Gemma 1's configs that name only hidden_act ("gelu" in the first releases) get the tanh
     * approximation the model was trained with, as vLLM computes it; another activation is refused.
     */
    @Test
    void gemma1WithOnlyHiddenActGeluUsesTheTanhApproximation(@TempDir Path tmp) throws Exception {
        ObjectNode c = config("tiny-gemma");
        c.remove("hidden_activation");
        c.put("hidden_act", "gelu");
        assertEquals("gelu_pytorch_tanh", family(c, tmp).activation());
        c.put("hidden_act", "relu");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> family(c, tmp));
        assertTrue(e.getMessage().contains("\"hidden_act\" relu is not supported"), e.getMessage());
        c.put("hidden_activation", "gelu");
        assertEquals("gelu", family(c, tmp).activation(), "hidden_activation, where given, decides");
    }

    /** transformers 5's Gemma 3 attention takes no softcap, whatever the config says; its logits do. */
    @Test
    void gemma3sAttentionIgnoresASoftcapItsLogitsTakeOne(@TempDir Path tmp) throws Exception {
        ObjectNode c = config("tiny-gemma3");
        c.put("attn_logit_softcapping", 1.0);
        c.put("final_logit_softcapping", 2.0);
        GemmaFamily f = family(c, tmp);
        for (AttentionKind k : f.kinds()) {
            assertEquals(0, k.softcap());
        }
        assertEquals(2.0, f.finalSoftcap());
    }

    @Test
    void bidirectionalGemmaAndSlidingLayersWithoutAWindowAreRefused(@TempDir Path tmp) throws Exception {
        ObjectNode c = config("tiny-gemma3");
        c.put("use_bidirectional_attention", true);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> family(c, tmp));
        assertTrue(e.getMessage().contains("use_bidirectional_attention"), e.getMessage());
        c.remove("use_bidirectional_attention");
        c.putNull("sliding_window");
        e = assertThrows(IllegalArgumentException.class, () -> family(c, tmp));
        assertTrue(e.getMessage().contains("\"sliding_window\" is null but layers slide"), e.getMessage());
    }

    /**
     * A transformers 5 rope_parameters per layer type without rope_theta takes the top level's
     * rope_theta (full layers) or rope_local_base_freq (sliding), and a rope_scaling beside it
     * applies to the full layers, as Gemma3TextConfig standardises them.
     */
    @Test
    void perLayerTypeRopeFallsBackToTheTopLevelsTheta(@TempDir Path tmp) throws Exception {
        ObjectNode c = JSON.createObjectNode().put("model_type", "gemma3_text").put("rope_theta", 500000.0)
                .put("rope_local_base_freq", 20000.0);
        ObjectNode rp = c.putObject("rope_parameters");
        rp.putObject("full_attention").put("rope_type", "default");
        rp.putObject("sliding_attention").put("rope_type", "default");
        c.putObject("rope_scaling").put("rope_type", "linear").put("factor", 4.0);
        JSON.writeValue(tmp.resolve("config.json").toFile(), c);
        HfConfig config = HfConfig.read(tmp);
        float[] full = RotaryFrequencies.ofLayerType(config, "full_attention", 64, false).invFreq();
        float[] sliding = RotaryFrequencies.ofLayerType(config, "sliding_attention", 64, false).invFreq();
        assertEquals(1f / (float) Math.pow(500000f, 2f / 64) / 4f, full[1], 1e-9f, "theta 5e5, linear factor 4");
        assertEquals(1f / (float) Math.pow(20000f, 2f / 64), sliding[1], 1e-9f, "theta 2e4, no scaling");
    }
}
