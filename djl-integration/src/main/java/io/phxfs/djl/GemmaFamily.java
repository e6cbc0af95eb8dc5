package io.phxfs.djl;

import java.util.List;
import java.util.Set;

/**
 * What a Gemma config.json describes, read as transformers 5's config classes read it, with
 * their defaults for absent fields (Gemma 3's multimodal checkpoints leave most of their
 * {@code text_config} to them).
 *
 * @param modelType {@code gemma}, {@code gemma2} or {@code gemma3_text}
 * @param layers {@code num_hidden_layers}
 * @param width {@code hidden_size}
 * @param heads {@code num_attention_heads}
 * @param kvHeads {@code num_key_value_heads}
 * @param headDim {@code head_dim}
 * @param vocab {@code vocab_size}
 * @param maxPositions {@code max_position_embeddings}
 * @param eps {@code rms_norm_eps}
 * @param attentionBias {@code attention_bias}: the attention's projections have biases
 * @param activation the MLP's gate activation ({@code gelu_pytorch_tanh} or {@code gelu})
 * @param sandwich the layer norms the attention's and the MLP's outputs too (Gemma 2 and 3)
 * @param qkNorm queries and keys are normalised per head (Gemma 3)
 * @param finalSoftcap {@code final_logit_softcapping}, 0 for none
 * @param layerTypes each layer's {@code full_attention} or {@code sliding_attention}
 * @param kinds each layer's attention: scale, softcap, window
 */
record GemmaFamily(String modelType, int layers, int width, int heads, int kvHeads, int headDim, int vocab, int maxPositions,
                   double eps, boolean attentionBias, String activation, boolean sandwich, boolean qkNorm, double finalSoftcap,
                   List<String> layerTypes, AttentionKind[] kinds) {
    /** The model types this family covers. */
    static final Set<String> TYPES = Set.of("gemma", "gemma2", "gemma3_text");

    /**
     * The Gemma a config describes.
     *
     * @param c the config
     * @return its settings
     * @throws IllegalArgumentException for another model type or a setting the block does not compute
     */
    static GemmaFamily of(HfConfig c) {
        String type = c.modelType();
        if (!TYPES.contains(type)) {
            throw new IllegalArgumentException(c.file() + ": " + c.field("model_type") + " \"" + type + "\" is not a Gemma ("
                    + String.join(", ", TYPES.stream().sorted().toList()) + ")");
        }
        boolean g1 = type.equals("gemma");
        boolean g3 = type.equals("gemma3_text");
        // GemmaConfig's, Gemma2Config's and Gemma3TextConfig's defaults
        int layers = intOr(c, "num_hidden_layers", g1 ? 28 : 26);
        int width = intOr(c, "hidden_size", g1 ? 3072 : 2304);
        int heads = intOr(c, "num_attention_heads", g1 ? 16 : 8);
        int kvHeads = intOr(c, "num_key_value_heads", g1 ? 16 : 4);
        int headDim = intOr(c, "head_dim", 256);
        int vocab = intOr(c, "vocab_size", g3 ? 262_208 : 256_000);
        int maxPositions = intOr(c, "max_position_embeddings", g3 ? 131_072 : 8192);
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException(c.file() + ": " + c.field("num_attention_heads") + " " + heads
                    + " is not a multiple of " + c.field("num_key_value_heads") + " " + kvHeads);
        }
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException(c.file() + ": " + c.field("head_dim") + " " + headDim
                    + " is odd; rotary embeddings need pairs");
        }
        if (c.bool("use_bidirectional_attention", false)) {
            // EmbeddingGemma: no causal mask, another window; an encoder, not a generator
            throw new IllegalArgumentException(c.file() + ": \"" + c.field("use_bidirectional_attention")
                    + "\" is true: bidirectional Gemma (an embedding model) is not supported, only causal generation");
        }
        // Gemma 2 and 3 read hidden_activation. Gemma 1's first configs said hidden_act "gelu" for a
        // model trained with the tanh approximation; their later ones add hidden_activation
        // "gelu_pytorch_tanh". As vLLM (and transformers 4, which warned), the tanh approximation
        // unless hidden_activation says otherwise; transformers 5 reads Gemma 1's hidden_act and so
        // computes exact GELU for such a config, 1e-3 away.
        String act = c.string("hidden_activation").orElse(null);
        if (act == null) {
            String hiddenAct = c.string("hidden_act").orElse("gelu_pytorch_tanh");
            if (!Set.of("gelu", "gelu_pytorch_tanh", "gelu_new").contains(hiddenAct)) {
                throw new IllegalArgumentException(c.file() + ": \"" + c.field("hidden_act") + "\" " + hiddenAct
                        + " is not supported (gelu, gelu_pytorch_tanh)");
            }
            act = "gelu_pytorch_tanh";
        }
        if (act.equals("gelu_new")) {
            act = "gelu_pytorch_tanh"; // the same function
        }
        if (!act.equals("gelu_pytorch_tanh") && !act.equals("gelu")) {
            throw new IllegalArgumentException(c.file() + ": \"" + c.field("hidden_activation") + "\" " + act
                    + " is not supported (gelu_pytorch_tanh, gelu)");
        }
        double scale = g1 ? Math.pow(headDim, -0.5) : Math.pow(positive(c, "query_pre_attn_scalar", 256), -0.5);
        // Gemma 2 softcaps unless a field is null. Gemma 3's attention never softcaps in
        // transformers 5 (its config's field reaches no computation); its logits do where the field is set
        double attnCap = type.equals("gemma2") ? softcap(c, "attn_logit_softcapping", 50.0) : 0;
        double finalCap = g1 ? 0 : softcap(c, "final_logit_softcapping", type.equals("gemma2") ? 30.0 : 0);
        int window = g1 || c.has("sliding_window") && c.value("sliding_window") == null ? 0 : intOr(c, "sliding_window", 4096);
        List<String> types = layerTypes(c, type, layers);
        if (window == 0 && types.contains("sliding_attention")) {
            // transformers refuses a sliding layer without a window; full attention there would be another model
            throw new IllegalArgumentException(c.file() + ": \"" + c.field("sliding_window") + "\" is null but layers "
                    + "slide (" + c.field("layer_types") + " or the model type's pattern)");
        }
        AttentionKind[] kinds = new AttentionKind[layers];
        for (int i = 0; i < layers; i++) {
            kinds[i] = new AttentionKind(scale, attnCap, types.get(i).equals("sliding_attention") ? window : 0);
        }
        return new GemmaFamily(type, layers, width, heads, kvHeads, headDim, vocab, maxPositions, c.number("rms_norm_eps", 1e-6),
                c.bool("attention_bias", false), act, !g1, g3, finalCap, types, kinds);
    }

    /**
     * Which layers slide: {@code layer_types} where the config has them, else Gemma 2's
     * alternation (even layers slide) or Gemma 3's {@code sliding_window_pattern} (every n-th
     * layer full, 6 by default); Gemma 1 has none.
     */
    private static List<String> layerTypes(HfConfig c, String type, int layers) {
        if (c.value("layer_types") instanceof List<?> l) {
            if (l.size() != layers) {
                throw new IllegalArgumentException(c.file() + ": " + c.field("layer_types") + " has " + l.size() + " entries for "
                        + layers + " layers");
            }
            for (int i = 0; i < l.size(); i++) {
                if (!"sliding_attention".equals(l.get(i)) && !"full_attention".equals(l.get(i))) {
                    throw new IllegalArgumentException(c.file() + ": " + c.field("layer_types") + "[" + i + "] is " + l.get(i)
                            + " (full_attention or sliding_attention)");
                }
            }
            return l.stream().map(String::valueOf).toList();
        }
        int pattern = switch (type) {
            case "gemma2" -> 2;
            case "gemma3_text" -> intOr(c, "sliding_window_pattern", 6);
            default -> 0;
        };
        String[] types = new String[layers];
        for (int i = 0; i < layers; i++) {
            types[i] = pattern > 0 && (i + 1) % pattern != 0 ? "sliding_attention" : "full_attention";
        }
        return List.of(types);
    }

    private static int intOr(HfConfig c, String name, int dflt) {
        return c.value(name) == null ? dflt : c.integer(name);
    }

    private static double positive(HfConfig c, String name, double dflt) {
        double v = c.number(name, dflt);
        if (!(v > 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException(c.file() + ": \"" + c.field(name) + "\" is " + v + ", not a positive number");
        }
        return v;
    }

    /** A softcap: its default when absent, none when null, else a positive number. */
    private static double softcap(HfConfig c, String name, double absent) {
        if (!c.has(name)) {
            return absent;
        }
        return c.value(name) == null ? 0 : positive(c, name, 0);
    }
}
