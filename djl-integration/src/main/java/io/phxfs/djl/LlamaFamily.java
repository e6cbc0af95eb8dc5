package io.phxfs.djl;

import java.util.List;
import java.util.Set;

/**
 * What sets a member of the Llama family apart in config.json, read as transformers' modelling
 * code for each {@code model_type} reads it.
 *
 * @param modelType {@code llama}, {@code mistral}, {@code qwen2}, {@code qwen3} or {@code phi3}
 * @param qkvBias the query, key and value projections have biases (Qwen2 always; Llama and Qwen3 with {@code attention_bias})
 * @param outBias the attention's output projection has a bias (Llama and Qwen3 with {@code attention_bias})
 * @param mlpBias the MLP's projections have biases (Llama with {@code mlp_bias})
 * @param qkNorm queries and keys are RMS-normalised per head before the rotation (Qwen3)
 * @param window the sliding attention window in tokens, or 0 for full attention everywhere
 * @param slidingFrom the first layer with the window (Qwen's {@code max_window_layers}); 0 for the others
 * @param layerTypes config.json's {@code layer_types} where it has them (which layers slide, transformers 5), else null
 * @param fused the query, key and value projections are one {@code qkv_proj}, the MLP's gate and up one {@code gate_up_proj} (Phi-3)
 */
record LlamaFamily(String modelType, boolean qkvBias, boolean outBias, boolean mlpBias, boolean qkNorm, int window,
                   int slidingFrom, List<?> layerTypes, boolean fused) {
    /** The model types this block computes. */
    static final Set<String> TYPES = Set.of("llama", "mistral", "qwen2", "qwen3", "phi3");

    /**
     * The variant a config describes.
     *
     * @param c the config
     * @return its variant
     * @throws IllegalArgumentException for another model type or a setting the block does not compute
     */
    static LlamaFamily of(HfConfig c) {
        String type = c.modelType();
        return switch (type) {
            case "llama" -> {
                boolean attn = c.bool("attention_bias", false);
                // transformers' Llama has no sliding window: it ignores the field
                yield new LlamaFamily(type, attn, attn, c.bool("mlp_bias", false), false, 0, 0, null, false);
            }
            // Mistral's projections have no biases, whatever attention_bias says
            // Mistral and Phi-3 slide every layer whenever sliding_window is set: their configs have no layer_types
            case "mistral" -> new LlamaFamily(type, false, false, false, false, window(c, true), 0, null, false);
            case "qwen2" -> new LlamaFamily(type, true, false, false, false, window(c, c.bool("use_sliding_window", false)),
                    maxWindowLayers(c), layerTypes(c), false);
            // Phi3Config's sliding_window defaults to none (Phi-3-mini-4k's config sets 2047)
            case "phi3" -> new LlamaFamily(type, false, false, false, false,
                    c.string("sliding_window").isEmpty() ? 0 : c.integer("sliding_window"), 0, null, true);
            case "qwen3" -> {
                boolean attn = c.bool("attention_bias", false);
                yield new LlamaFamily(type, attn, attn, false, true, window(c, c.bool("use_sliding_window", false)),
                        maxWindowLayers(c), layerTypes(c), false);
            }
            default -> throw new IllegalArgumentException(c.file() + ": model_type \"" + type
                    + "\" is not of the Llama family (" + String.join(", ", TYPES.stream().sorted().toList()) + ")");
        };
    }

    /** config.json's {@code layer_types}, or null. */
    private static List<?> layerTypes(HfConfig c) {
        return c.value("layer_types") instanceof List<?> l ? l : null;
    }

    /** Qwen's {@code max_window_layers}: layers below it keep full attention (Qwen2Config and Qwen3Config default 28). */
    private static int maxWindowLayers(HfConfig c) {
        return c.value("max_window_layers") == null ? 28 : c.integer("max_window_layers");
    }

    /**
     * Each layer's attention, as transformers 5 decides which layers slide: {@code layer_types}
     * where the config has them, else every layer (Mistral, Phi-3) or those from
     * {@code max_window_layers} on (Qwen2, Qwen3), when the model has a window at all.
     *
     * @param c the config (for messages)
     * @param layers the number of layers
     * @return one kind per layer
     * @throws IllegalArgumentException when {@code layer_types} does not name one known type per layer
     */
    AttentionKind[] kinds(HfConfig c, int layers) {
        AttentionKind[] kinds = new AttentionKind[layers];
        if (layerTypes != null && layerTypes.size() != layers) {
            throw new IllegalArgumentException(c.file() + ": layer_types has " + layerTypes.size() + " entries for "
                    + layers + " layers");
        }
        for (int i = 0; i < layers; i++) {
            boolean sliding;
            if (layerTypes != null) {
                Object t = layerTypes.get(i);
                if (!"sliding_attention".equals(t) && !"full_attention".equals(t)) {
                    throw new IllegalArgumentException(c.file() + ": layer_types[" + i + "] is " + t
                            + " (full_attention or sliding_attention)");
                }
                sliding = t.equals("sliding_attention");
                if (sliding && window == 0) {
                    // transformers refuses a sliding layer without a window: full attention there would be another model
                    throw new IllegalArgumentException(c.file() + ": layer_types[" + i + "] is sliding_attention but the"
                            + " config has no window (use_sliding_window false or sliding_window null)");
                }
            } else {
                sliding = window > 0 && i >= slidingFrom;
            }
            kinds[i] = AttentionKind.window(sliding ? window : 0);
        }
        return kinds;
    }

    /**
     * The window, where the model has one: Mistral always, Qwen with {@code use_sliding_window}
     * ({@code enabled}), as transformers' configs keep {@code sliding_window} (Qwen's is None
     * without use_sliding_window, whatever the field says).
     */
    private static int window(HfConfig c, boolean enabled) {
        if (!enabled) {
            return 0;
        }
        // transformers' configs default an absent sliding_window to 4096; only null turns it off
        if (!c.has("sliding_window")) {
            return DEFAULT_WINDOW;
        }
        return c.string("sliding_window").isEmpty() ? 0 : c.integer("sliding_window");
    }

    /** transformers' default {@code sliding_window} for Mistral, Qwen2 and Qwen3 configs. */
    private static final int DEFAULT_WINDOW = 4096;

    /**
     * {@code num_key_value_heads}, or its default for the model type as transformers' config
     * classes have it (Llama: the head count; Mistral 8; Qwen2 and Qwen3 32).
     *
     * @param c the config
     * @param heads {@code num_attention_heads}
     * @return the key/value head count
     */
    int kvHeads(HfConfig c, int heads) {
        if (c.value("num_key_value_heads") != null) {
            return c.integer("num_key_value_heads");
        }
        return switch (modelType) {
            case "mistral" -> 8;
            case "qwen2", "qwen3" -> 32;
            default -> heads;
        };
    }

    /**
     * {@code head_dim}, or its default for the model type (Qwen3: 128; the others: hidden / heads).
     *
     * @param c the config
     * @param width {@code hidden_size}
     * @param heads {@code num_attention_heads}
     * @return the head dimension
     */
    int headDim(HfConfig c, int width, int heads) {
        if (c.value("head_dim") != null) {
            return c.integer("head_dim");
        }
        return modelType.equals("qwen3") ? 128 : width / heads;
    }
}
