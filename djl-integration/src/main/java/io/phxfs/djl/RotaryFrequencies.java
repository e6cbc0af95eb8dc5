package io.phxfs.djl;

import java.util.Map;

/**
 * The rotary embedding of a Llama-family config.json, as transformers' rope initialisers compute
 * it: the inverse frequencies and the factor cos and sin are scaled by. Types: {@code default},
 * {@code linear} (positions divided by {@code factor}), {@code llama3} (Llama 3.1 and 3.2: low
 * frequencies divided by {@code factor}, high ones kept, the band between interpolated) and
 * {@code yarn} (Qwen2.5's long-context setting: the same idea with YaRN's ramp, and cos and sin
 * scaled). The settings are read from {@code rope_parameters} (transformers 5) or
 * {@code rope_scaling} plus a top-level {@code rope_theta} (the layout of checkpoints written by
 * transformers 4). Types whose angles depend on the sequence's length ({@code dynamic},
 * {@code longrope}) are refused: computed as another type they would give other logits.
 *
 * @param invFreq the inverse frequency of each of the head's {@code headDim / 2} pairs
 * @param scaling what cos and sin are multiplied by (YaRN's attention factor; 1 for the others)
 */
record RotaryFrequencies(float[] invFreq, float scaling) {

    /**
     * The rotary embedding a config describes.
     *
     * @param config the model's config
     * @param headDim the rotated dimension (even)
     * @param bf16 round each frequency to bf16, as transformers' buffer is when the model runs in bf16
     * @return the inverse frequencies in float32 and the scale of cos and sin
     */
    static RotaryFrequencies of(HfConfig config, int headDim, boolean bf16) {
        double partial = config.number("partial_rotary_factor", 1.0);
        if (partial != 1.0) {
            throw new IllegalArgumentException(config.file() + ": partial_rotary_factor " + partial
                    + " is not supported (1: every dimension of the head rotates)");
        }
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
        float scaling = 1;
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
            case "yarn" -> scaling = yarn(config, rope, where, theta, headDim, inv);
            default -> throw new IllegalArgumentException(config.file() + ": " + where + ".rope_type \"" + t
                    + "\" is not supported (default, linear, llama3, yarn)");
        }
        if (bf16) {
            for (int i = 0; i < inv.length; i++) {
                int bits = Float.floatToIntBits(inv[i]);
                inv[i] = Float.intBitsToFloat((bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000); // round to nearest even
            }
        }
        return new RotaryFrequencies(inv, scaling);
    }

    /**
     * transformers' {@code _compute_yarn_parameters}, in its float32 operation order: each
     * frequency between its extrapolated (kept) and interpolated (divided by {@code factor}) value
     * by a linear ramp over the pairs whose wavelengths fall between {@code beta_fast} and
     * {@code beta_slow} rotations of the original context. transformers takes the explicit
     * {@code factor}, not {@code max_position_embeddings / original_max_position_embeddings}.
     *
     * @return the attention factor cos and sin are scaled by
     */
    private static float yarn(HfConfig config, Map<String, Object> rope, String where, double theta, int dim, float[] inv) {
        double factor = positive(config, rope, where, "factor");
        double original = rope.get("original_max_position_embeddings") == null
                ? config.integer("max_position_embeddings")
                : positive(config, rope, where, "original_max_position_embeddings");
        double betaFast = rope.get("beta_fast") == null ? 32 : positive(config, rope, where, "beta_fast");
        double betaSlow = rope.get("beta_slow") == null ? 1 : positive(config, rope, where, "beta_slow");
        boolean truncate = !(rope.get("truncate") instanceof Boolean b) || b;
        double low = correctionDim(betaFast, dim, theta, original);
        double high = correctionDim(betaSlow, dim, theta, original);
        if (truncate) {
            low = Math.floor(low);
            high = Math.ceil(high);
        }
        low = Math.max(low, 0);
        high = Math.min(high, dim - 1);
        if (low == high) {
            high += 0.001; // as transformers, against a division by zero
        }
        float fl = (float) low;
        float span = (float) (high - low);
        float ff = (float) factor;
        for (int i = 0; i < inv.length; i++) {
            float pos = (float) Math.pow((float) theta, (float) (2 * i) / dim);
            float extrapolated = 1.0f / pos;
            float interpolated = 1.0f / (ff * pos);
            float ramp = Math.min(1f, Math.max(0f, ((float) i - fl) / span));
            float keep = 1 - ramp;
            inv[i] = interpolated * (1 - keep) + extrapolated * keep;
        }
        Object given = rope.get("attention_factor");
        if (given != null) {
            return (float) positive(config, rope, where, "attention_factor");
        }
        Object mscale = rope.get("mscale");
        Object mscaleAll = rope.get("mscale_all_dim");
        if (mscale instanceof Number m && mscaleAll instanceof Number a && m.doubleValue() != 0 && a.doubleValue() != 0) {
            return (float) (yarnScale(factor, m.doubleValue()) / yarnScale(factor, a.doubleValue()));
        }
        return (float) yarnScale(factor, 1);
    }

    /** The pair whose wavelength turns {@code rotations} times over {@code context} positions. */
    private static double correctionDim(double rotations, int dim, double theta, double context) {
        return dim * Math.log(context / (rotations * 2 * Math.PI)) / (2 * Math.log(theta));
    }

    private static double yarnScale(double factor, double mscale) {
        return factor <= 1 ? 1.0 : 0.1 * mscale * Math.log(factor) + 1.0;
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
