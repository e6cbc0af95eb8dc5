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
 * @param fused the query, key and value projections are one {@code qkv_proj}, the MLP's gate and up one {@code gate_up_proj} (Phi-3)
 */
record LlamaFamily(String modelType, boolean qkvBias, boolean outBias, boolean mlpBias, boolean qkNorm, int window,
                   boolean fused) {
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
                yield new LlamaFamily(type, attn, attn, c.bool("mlp_bias", false), false, 0, false);
            }
            // Mistral's projections have no biases, whatever attention_bias says
            case "mistral" -> new LlamaFamily(type, false, false, false, false, window(c, true), false);
            case "qwen2" -> new LlamaFamily(type, true, false, false, false, window(c, c.bool("use_sliding_window", false)), false);
            // Phi3Config's sliding_window defaults to none (Phi-3-mini-4k's config sets 2047)
            case "phi3" -> new LlamaFamily(type, false, false, false, false,
                    c.string("sliding_window").isEmpty() ? 0 : c.integer("sliding_window"), true);
            case "qwen3" -> {
                boolean attn = c.bool("attention_bias", false);
                yield new LlamaFamily(type, attn, attn, false, true, window(c, c.bool("use_sliding_window", false)), false);
            }
            default -> throw new IllegalArgumentException(c.file() + ": model_type \"" + type
                    + "\" is not of the Llama family (" + String.join(", ", TYPES.stream().sorted().toList()) + ")");
        };
    }

    /**
     * The window when any layer slides: {@code layer_types} decides where a config has it
     * (transformers 5), else {@code sliding}, the model type's older rule.
     */
    private static int window(HfConfig c, boolean sliding) {
        Object types = c.value("layer_types");
        if (types instanceof List<?> l) {
            sliding = l.contains("sliding_attention");
        }
        if (!sliding) {
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

    /**
     * The longest sequence the block computes exactly as the checkpoint's own code does: within
     * a sliding window every token sees every earlier one, so a model with a window is served up
     * to the window's length, where full attention and the window agree.
     *
     * @param maxPositions config.json's {@code max_position_embeddings}
     * @return the context length
     */
    int contextLength(int maxPositions) {
        return window > 0 ? Math.min(window, maxPositions) : maxPositions;
    }
}
