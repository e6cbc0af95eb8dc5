package io.phxfs.djl;

import java.util.Map;

/**
 * The rotary embedding of a Llama-family config.json, as transformers 5's rope initialisers
 * compute it: the inverse frequencies, the factor cos and sin are scaled by, and the longest
 * sequence it holds for. Types: {@code default}; {@code linear} (positions divided by
 * {@code factor}); {@code dynamic} (NTK scaling, which keeps the default frequencies up to the
 * original context, so the block stops there); {@code llama3} (Llama 3.1 to 3.3: low frequencies
 * divided by {@code factor}, high ones kept, the band between interpolated); {@code yarn}
 * (Qwen2.5's and Qwen3's long-context setting: the same idea with YaRN's ramp, and cos and sin
 * scaled); {@code longrope} (Phi-3.5 and Phi-4-mini: per-pair short factors, up to the original
 * context, past which transformers switches to the long ones). A {@code partial_rotary_factor}
 * rotates that share of each head. The settings are read as transformers 5 reads them: {@code rope_scaling} (checkpoints
 * written by transformers 4) or else {@code rope_parameters} (5), {@code rope_theta} from that
 * object or else the top level, and a top-level {@code original_max_position_embeddings} over the
 * object's. Per-layer-type settings are refused, naming the field.
 *
 * @param invFreq the inverse frequency of each rotated pair: {@code headDim / 2}, fewer with a {@code partial_rotary_factor}
 * @param scaling what cos and sin are multiplied by (YaRN's attention factor; 1 for the others)
 * @param maxPositions the longest sequence these frequencies hold for ({@code Integer.MAX_VALUE}: any)
 */
record RotaryFrequencies(float[] invFreq, float scaling, int maxPositions) {
    /**
     * The rotary embedding a config describes.
     *
     * @param config the model's config
     * @param headDim the rotated dimension (even)
     * @param bf16 round each frequency to bf16, as transformers' buffer is when the model runs in bf16
     * @return the inverse frequencies in float32, the scale of cos and sin, and the positions they hold for
     */
    static RotaryFrequencies of(HfConfig config, int headDim, boolean bf16) {
        Map<String, Object> rope = config.object("rope_scaling");
        String where = config.field("rope_scaling");
        if (rope.isEmpty()) {
            rope = config.object("rope_parameters");
            where = config.field("rope_parameters");
        }
        for (Map.Entry<String, Object> e : rope.entrySet()) {
            if (e.getValue() instanceof Map) {
                throw new IllegalArgumentException(config.file() + ": " + where + "." + e.getKey()
                        + ": rope settings per layer type are not supported (one set for every layer)");
            }
        }
        return of(config, rope, where, config.number("rope_theta", 10000.0), headDim, bf16);
    }

    /**
     * The rotary embedding of one layer type of a model whose layer types each have their own
     * (Gemma 3: {@code sliding_attention} and {@code full_attention}), as transformers 5 reads
     * it: {@code rope_parameters.<type>} where the config has it (transformers 5's layout), else
     * transformers 4's fields, {@code rope_theta} and {@code rope_scaling} for full attention,
     * {@code rope_local_base_freq} for sliding.
     *
     * @param config the model's config
     * @param layerType {@code full_attention} or {@code sliding_attention}
     * @param headDim the rotated dimension (even)
     * @param bf16 round each frequency to bf16
     * @return the layer type's frequencies
     */
    static RotaryFrequencies ofLayerType(HfConfig config, String layerType, int headDim, boolean bf16) {
        boolean full = layerType.equals("full_attention");
        // as Gemma3TextConfig standardises them: rope_parameters.<type> (transformers 5) or a default
        // one, rope_scaling merged into the full layers' settings, and rope_theta or
        // rope_local_base_freq where the settings have none
        Map<String, Object> rope = new java.util.LinkedHashMap<>();
        String where = config.field("rope_parameters." + layerType);
        if (config.object("rope_parameters").get(layerType) instanceof Map<?, ?> m) {
            m.forEach((k, v) -> rope.put(String.valueOf(k), v));
        }
        if (full && !config.object("rope_scaling").isEmpty()) {
            rope.putAll(config.object("rope_scaling"));
            if (!(config.object("rope_parameters").get(layerType) instanceof Map)) {
                where = config.field("rope_scaling");
            }
        }
        double theta = full ? config.number("rope_theta", 1_000_000.0) : config.number("rope_local_base_freq", 10_000.0);
        return of(config, rope, where, theta, headDim, bf16);
    }

    private static RotaryFrequencies of(HfConfig config, Map<String, Object> rope, String where, double defaultTheta,
                                        int headDim, boolean bf16) {
        Object partialHere = rope.get("partial_rotary_factor");
        double partial = partialHere instanceof Number n ? n.doubleValue() : config.number("partial_rotary_factor", 1.0);
        // as transformers: int(head_dim * partial_rotary_factor) dimensions rotate, the rest pass
        int rotated = (int) (headDim * partial);
        if (!(partial > 0 && partial <= 1) || rotated < 2 || rotated % 2 != 0) {
            throw new IllegalArgumentException(config.file() + ": " + (partialHere != null ? where + "." : "")
                    + "partial_rotary_factor " + partial + " is not supported: it must rotate an even number of the head's "
                    + headDim + " dimensions (in (0, 1])");
        }
        Object type = rope.getOrDefault("rope_type", rope.getOrDefault("type", "default"));
        double theta = rope.get("rope_theta") instanceof Number n ? n.doubleValue() : defaultTheta;
        float[] inv = defaults(theta, rotated);
        String t = type == null ? "default" : String.valueOf(type);
        float scaling = 1;
        int max = Integer.MAX_VALUE;
        switch (t) {
            case "default" -> {
            }
            case "linear" -> {
                float factor = (float) positive(config, rope, where, "factor");
                for (int i = 0; i < inv.length; i++) {
                    inv[i] /= factor;
                }
            }
            case "dynamic" -> {
                positive(config, rope, where, "factor");
                // transformers recomputes the frequencies only past the original context: up to it they are the default ones
                if (original(config, rope) != null) {
                    max = (int) Math.min(Integer.MAX_VALUE, originalContext(config, rope, where));
                }
            }
            case "llama3" -> llama3(config, rope, where, inv);
            case "yarn" -> scaling = yarn(config, rope, where, theta, rotated, inv);
            case "longrope" -> {
                scaling = longrope(config, rope, where, theta, rotated, inv);
                // past the original context transformers switches to long_factor for every position: computed up to it
                if (original(config, rope) != null) {
                    max = (int) Math.min(Integer.MAX_VALUE, originalContext(config, rope, where));
                }
            }
            default -> throw new IllegalArgumentException(config.file() + ": " + where + ".rope_type \"" + t
                    + "\" is not supported (default, linear, dynamic, llama3, yarn, longrope)");
        }
        if (bf16) {
            for (int i = 0; i < inv.length; i++) {
                int bits = Float.floatToIntBits(inv[i]);
                inv[i] = Float.intBitsToFloat((bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000); // round to nearest even
            }
        }
        return new RotaryFrequencies(inv, scaling, max);
    }

    /**
     * transformers' default frequencies in its float32 operations: {@code 1 / theta ** (2i / d)},
     * the exponent a float32 quotient, the power rounded to float32, then the float32 reciprocal
     * (computed in double and rounded once, they differ by an ulp, which a position of 100,000
     * turns into a visible angle).
     */
    private static float[] defaults(double theta, int dim) {
        float[] inv = new float[dim / 2];
        float base = (float) theta;
        for (int i = 0; i < inv.length; i++) {
            inv[i] = 1.0f / power(base, (float) (2 * i) / dim);
        }
        return inv;
    }

    /** A float32 power as libm's powf gives it: the exact power rounded once. */
    private static float power(float base, float exponent) {
        return (float) Math.pow(base, exponent);
    }

    /** The original context: the top level's over the rope object's, as transformers 5 standardises them. */
    private static Object original(HfConfig config, Map<String, Object> rope) {
        Object top = config.value("original_max_position_embeddings");
        return top != null ? top : rope.get("original_max_position_embeddings");
    }

    /** transformers' {@code _compute_llama3_parameters}, in its float32 operation order. */
    private static void llama3(HfConfig config, Map<String, Object> rope, String where, float[] inv) {
        float factor = (float) positive(config, rope, where, "factor");
        float low = (float) positive(config, rope, where, "low_freq_factor");
        float high = (float) positive(config, rope, where, "high_freq_factor");
        float context = (float) originalContext(config, rope, where);
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

    /**
     * transformers 5's {@code _compute_yarn_parameters}, in its float32 operation order: each
     * frequency between its extrapolated (kept) and interpolated (divided by {@code factor}) value
     * by a linear ramp over the pairs whose wavelengths fall between {@code beta_fast} and
     * {@code beta_slow} rotations of the original context. transformers 5 takes the explicit
     * {@code factor} (4.x replaced it by {@code max_position_embeddings / original_max_position_embeddings}
     * when the latter was given, so the two versions differ on such configs; vLLM takes the explicit one too).
     *
     * @return the attention factor cos and sin are scaled by
     */
    private static float yarn(HfConfig config, Map<String, Object> rope, String where, double theta, int dim, float[] inv) {
        double factor = positive(config, rope, where, "factor");
        double original = original(config, rope) == null ? config.integer("max_position_embeddings")
                : originalContext(config, rope, where);
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
        float base = (float) theta;
        for (int i = 0; i < inv.length; i++) {
            float pos = power(base, (float) (2 * i) / dim);
            float extrapolated = 1.0f / pos;
            float interpolated = 1.0f / (ff * pos);
            float ramp = Math.min(1f, Math.max(0f, ((float) i - fl) / span));
            float keep = 1 - ramp;
            inv[i] = interpolated * (1 - keep) + extrapolated * keep;
        }
        if (rope.get("attention_factor") != null) {
            return (float) positive(config, rope, where, "attention_factor");
        }
        Object mscale = rope.get("mscale");
        Object mscaleAll = rope.get("mscale_all_dim");
        if (mscale instanceof Number m && mscaleAll instanceof Number a && m.doubleValue() != 0 && a.doubleValue() != 0) {
            return (float) (yarnScale(factor, m.doubleValue()) / yarnScale(factor, a.doubleValue()));
        }
        return (float) yarnScale(factor, 1);
    }

    /**
     * transformers 5's {@code _compute_longrope_parameters} for sequences within the original
     * context: each default frequency divided by its {@code short_factor} (float32), and cos and
     * sin scaled by {@code attention_factor}, else by sqrt(1 + ln(factor) / ln(original)) with the
     * factor {@code max_position_embeddings / original_max_position_embeddings} where the config
     * has the latter (Phi-3's way), {@code factor} otherwise.
     *
     * @return the attention factor
     */
    private static float longrope(HfConfig config, Map<String, Object> rope, String where, double theta, int dim, float[] inv) {
        float[] shortFactor = factors(config, rope, where, "short_factor", inv.length);
        factors(config, rope, where, "long_factor", inv.length);
        float base = (float) theta;
        for (int i = 0; i < inv.length; i++) {
            inv[i] = 1.0f / (shortFactor[i] * power(base, (float) (2 * i) / dim));
        }
        if (rope.get("attention_factor") != null) {
            return (float) positive(config, rope, where, "attention_factor");
        }
        double original;
        double factor;
        if (original(config, rope) != null) {
            original = originalContext(config, rope, where);
            factor = config.integer("max_position_embeddings") / original;
        } else {
            original = config.integer("max_position_embeddings");
            factor = rope.get("factor") == null ? 1.0 : positive(config, rope, where, "factor");
        }
        return factor <= 1 ? 1f : (float) Math.sqrt(1 + Math.log(factor) / Math.log(original));
    }

    private static float[] factors(HfConfig config, Map<String, Object> rope, String where, String key, int n) {
        if (!(rope.get(key) instanceof java.util.List<?> l) || l.size() != n) {
            throw new IllegalArgumentException(config.file() + ": " + where + "." + key + " must be a list of " + n
                    + " numbers (one per rotated pair), not " + rope.get(key));
        }
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            if (!(l.get(i) instanceof Number x) || !(x.doubleValue() > 0)) {
                throw new IllegalArgumentException(config.file() + ": " + where + "." + key + "[" + i + "] is " + l.get(i)
                        + ", not a positive number");
            }
            out[i] = x.floatValue();
        }
        return out;
    }

    private static double originalContext(HfConfig config, Map<String, Object> rope, String where) {
        if (config.value("original_max_position_embeddings") != null) {
            return config.integer("original_max_position_embeddings");
        }
        return positive(config, rope, where, "original_max_position_embeddings");
    }

    /** The pair whose wavelength turns {@code rotations} times over {@code context} positions. */
    private static double correctionDim(double rotations, int dim, double theta, double context) {
        return dim * Math.log(context / (rotations * 2 * Math.PI)) / (2 * Math.log(theta));
    }

    private static double yarnScale(double factor, double mscale) {
        return factor <= 1 ? 1.0 : 0.1 * mscale * Math.log(factor) + 1.0;
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
