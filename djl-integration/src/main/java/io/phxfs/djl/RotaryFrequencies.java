package io.phxfs.djl;

import java.util.Map;

/**
 * The rotary embedding's inverse frequencies of a Llama-family config.json, as transformers' rope
 * initialisers compute them. Types: {@code default}, {@code linear} (positions divided by
 * {@code factor}) and {@code llama3} (Llama 3.1 and 3.2: low frequencies divided by
 * {@code factor}, high ones kept, the band between interpolated). The settings are read from
 * {@code rope_parameters} (transformers 5) or {@code rope_scaling} plus a top-level
 * {@code rope_theta} (the layout of checkpoints written by transformers 4). Types whose angles
 * depend on the sequence's length or scale the attention ({@code dynamic}, {@code yarn},
 * {@code longrope}) are refused: computed as default they would give other logits.
 */
final class RotaryFrequencies {
    private RotaryFrequencies() {
    }

    /**
     * The frequencies of {@code headDim / 2} pairs.
     *
     * @param config the model's config
     * @param headDim the rotated dimension (even)
     * @param bf16 round each frequency to bf16, as transformers' buffer is when the model runs in bf16
     * @return the inverse frequencies in float32
     */
    static float[] of(HfConfig config, int headDim, boolean bf16) {
        Map<String, Object> rope = config.object("rope_parameters");
        String where = "rope_parameters";
        if (rope.isEmpty()) {
            rope = config.object("rope_scaling");
            where = "rope_scaling";
        }
        Object type = rope.getOrDefault("rope_type", rope.getOrDefault("type", "default"));
        double theta = rope.get("rope_theta") instanceof Number n ? n.doubleValue() : config.number("rope_theta", 10000.0);
        float[] inv = new float[headDim / 2];
        for (int i = 0; i < inv.length; i++) {
            // as transformers computes it: float32 of theta^(2i/d)
            inv[i] = (float) (1.0 / Math.pow(theta, (2.0 * i) / headDim));
        }
        String t = type == null ? "default" : String.valueOf(type);
        switch (t) {
            case "default" -> {
            }
            case "linear" -> {
                float factor = (float) positive(config, rope, where, "factor");
                for (int i = 0; i < inv.length; i++) {
                    inv[i] /= factor;
                }
            }
            case "llama3" -> llama3(config, rope, where, inv);
            default -> throw new IllegalArgumentException(config.file() + ": " + where + ".rope_type \"" + t
                    + "\" is not supported (default, linear, llama3)");
        }
        if (bf16) {
            for (int i = 0; i < inv.length; i++) {
                int bits = Float.floatToIntBits(inv[i]);
                inv[i] = Float.intBitsToFloat((bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000); // round to nearest even
            }
        }
        return inv;
    }

    /** transformers' {@code _compute_llama3_parameters}, in its float32 operation order. */
    private static void llama3(HfConfig config, Map<String, Object> rope, String where, float[] inv) {
        float factor = (float) positive(config, rope, where, "factor");
        float low = (float) positive(config, rope, where, "low_freq_factor");
        float high = (float) positive(config, rope, where, "high_freq_factor");
        float context = (float) positive(config, rope, where, "original_max_position_embeddings");
        if (high <= low) {
            throw new IllegalArgumentException(config.file() + ": " + where + ".high_freq_factor " + high
                    + " must be above low_freq_factor " + low);
        }
        float lowWavelen = context / low;
        float highWavelen = context / high;
        float twoPi = (float) (2 * Math.PI);
        for (int i = 0; i < inv.length; i++) {
            float wavelen = twoPi / inv[i];
            float scaled = wavelen > lowWavelen ? inv[i] / factor : inv[i];
            if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
                float smooth = (context / wavelen - low) / (high - low);
                scaled = (1 - smooth) * scaled / factor + smooth * scaled;
            }
            inv[i] = scaled;
        }
    }

    private static double positive(HfConfig config, Map<String, Object> rope, String where, String key) {
        Object v = rope.get(key);
        if (!(v instanceof Number n) || !(n.doubleValue() > 0) || Double.isInfinite(n.doubleValue())) {
            throw new IllegalArgumentException(config.file() + ": " + where + "." + key + " is "
                    + (v == null ? "missing" : v) + "; rope_type " + rope.getOrDefault("rope_type", rope.get("type"))
                    + " needs a positive number");
        }
        return n.doubleValue();
    }
}
