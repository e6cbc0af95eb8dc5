package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.util.Map;

/**
 * Llama ({@code model_type: llama}) from DJL operations: RMSNorm, rotary position embeddings (the default rope type, Hugging
 * Face's rotate-half layout), grouped-query attention ({@code num_key_value_heads} below
 * {@code num_attention_heads}) and the SiLU-gated MLP. The LM head is {@code lm_head.weight},
 * or the token embedding when {@code tie_word_embeddings} is true. Computation is in the
 * block's dtype (float32 unless asked), RMSNorm and softmax in float32 as transformers does.
 */
public final class LlamaBlock extends CausalLmBlock {
    private final int heads;
    private final int kvHeads;
    private final int headDim;
    private final int width;
    private final int positions;
    private final double eps;
    private final float[] invFreq;
    private final NDArray embed;
    private final NDArray head;
    private final NDArray normW;
    private final Layer[] layer;

    private record Layer(NDArray inNorm, NDArray q, NDArray k, NDArray v, NDArray o, NDArray postNorm,
                         NDArray gate, NDArray up, NDArray down) {
    }

    /**
     * Llama over loaded weights, rotary frequencies in float32.
     *
     * @param weights the checkpoint's arrays
     * @param config its config.json
     * @param manager the model's manager
     */
    public LlamaBlock(PhoenixWeights weights, HfConfig config, NDManager manager) {
        this(weights, config, manager, false);
    }

    /**
     * Llama over loaded weights.
     *
     * @param weights the checkpoint's arrays
     * @param config its config.json
     * @param manager the model's manager
     * @param bf16RopeFrequencies round the rotary inverse frequencies to bf16, as transformers
     *        does when it runs a model in bf16 (its {@code inv_freq} buffer is cast with the
     *        model): the angles then drift from the exact ones in proportion to the position
     *        (about 0.1 rad at position 600 for tiny-llama), which the logits of such a run show
     */
    public LlamaBlock(PhoenixWeights weights, HfConfig config, NDManager manager, boolean bf16RopeFrequencies) {
        this(weights, config, manager, bf16RopeFrequencies, DataType.FLOAT32);
    }

    /**
     * Llama over loaded weights, computing in {@code dtype}.
     *
     * @param weights the checkpoint's arrays
     * @param config its config.json
     * @param manager the model's manager
     * @param bf16RopeFrequencies round the rotary inverse frequencies to bf16 (see the constructor above)
     * @param dtype FLOAT32, FLOAT16 or BFLOAT16
     */
    public LlamaBlock(PhoenixWeights weights, HfConfig config, NDManager manager, boolean bf16RopeFrequencies, DataType dtype) {
        super(weights, config, manager, config.integer("num_hidden_layers"), config.integer("vocab_size"), dtype);
        heads = config.integer("num_attention_heads");
        kvHeads = config.optInteger("num_key_value_heads").orElse(heads);
        width = config.integer("hidden_size");
        headDim = config.optInteger("head_dim").orElse(width / heads);
        positions = config.integer("max_position_embeddings");
        eps = config.number("rms_norm_eps", 1e-6);
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException(config.file() + ": num_attention_heads " + heads
                    + " is not a multiple of num_key_value_heads " + kvHeads);
        }
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException(config.file() + ": head_dim " + headDim + " is odd; rotary embeddings need pairs");
        }
        if (config.bool("attention_bias", false) || config.bool("mlp_bias", false)) {
            throw new IllegalArgumentException(config.file() + ": attention_bias/mlp_bias true is not supported");
        }
        String act = config.string("hidden_act").orElse("silu");
        if (!act.equals("silu")) {
            throw new IllegalArgumentException(config.file() + ": \"hidden_act\" " + act + " is not supported (silu)");
        }
        // transformers 5 keeps rope settings in rope_parameters, earlier versions at the top level
        Map<String, Object> rope = config.object("rope_parameters");
        if (rope.isEmpty()) {
            rope = config.object("rope_scaling");
        }
        Object type = rope.getOrDefault("rope_type", rope.getOrDefault("type", "default"));
        if (type != null && !"default".equals(type)) {
            throw new IllegalArgumentException(config.file() + ": rope type " + type + " is not supported (default)");
        }
        double theta = rope.get("rope_theta") instanceof Number n ? n.doubleValue() : config.number("rope_theta", 10000.0);
        invFreq = new float[headDim / 2];
        for (int i = 0; i < invFreq.length; i++) {
            // as transformers computes it: float32 of theta^(2i/d)
            invFreq[i] = (float) (1.0 / Math.pow(theta, (2.0 * i) / headDim));
            if (bf16RopeFrequencies) {
                int bits = Float.floatToIntBits(invFreq[i]);
                invFreq[i] = Float.intBitsToFloat((bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000); // round to nearest even
            }
        }
        embed = weight("model.embed_tokens.weight", Parameter.Type.WEIGHT);
        layer = new Layer[layers()];
        for (int i = 0; i < layer.length; i++) {
            String l = "model.layers." + i + ".";
            layer[i] = new Layer(weight(l + "input_layernorm.weight", Parameter.Type.GAMMA),
                    linear(l + "self_attn.q_proj.weight"), linear(l + "self_attn.k_proj.weight"),
                    linear(l + "self_attn.v_proj.weight"), linear(l + "self_attn.o_proj.weight"),
                    weight(l + "post_attention_layernorm.weight", Parameter.Type.GAMMA),
                    linear(l + "mlp.gate_proj.weight"), linear(l + "mlp.up_proj.weight"), linear(l + "mlp.down_proj.weight"));
        }
        normW = weight("model.norm.weight", Parameter.Type.GAMMA);
        boolean tied = config.bool("tie_word_embeddings", false);
        head = tied ? transposed(embed) : linear("lm_head.weight");
    }

    @Override
    public int kvHeads() {
        return kvHeads;
    }

    @Override
    public int headDim() {
        return headDim;
    }

    @Override
    public int contextLength() {
        return positions;
    }

    /** A Linear weight {@code [out, in]} as {@code [in, out]} for x.matMul (a view). */
    private NDArray linear(String name) {
        return transposed(weight(name, Parameter.Type.WEIGHT));
    }

    private NDArray transposed(NDArray w) {
        NDArray t = w.transpose();
        t.attach(manager);
        return t;
    }

    /** As transformers' LlamaRMSNorm: in float32, cast back, then scaled by the weight in the compute dtype. */
    private NDArray rmsNorm(NDArray x, NDArray w) {
        NDArray xf = Precision.to(x, DataType.FLOAT32);
        NDArray ms = xf.square().mean(new int[] {-1}, true);
        return Precision.to(xf.div(ms.add(eps).sqrt()), dtype).mul(w);
    }

    private static NDArray silu(NDArray x) {
        return x.mul(ai.djl.nn.Activation.sigmoid(x));
    }

    /** x [H, T, d] rotated by the angles of positions past..past+T. */
    private static NDArray rope(NDArray x, NDArray cos, NDArray sin) {
        long half = x.getShape().get(2) / 2;
        NDList parts = x.split(new long[] {half}, 2);
        NDArray rotated = parts.get(1).neg().concat(parts.get(0), 2);
        return x.mul(cos).add(rotated.mul(sin));
    }

    /** The rotary cos and sin rows of the positions {@code at}, each of {@code headDim} (the rotate-half layout), as {@code shape}. */
    private NDArray[] rotaryTables(NDManager m, int[] at, Shape shape) {
        float[] cos = new float[at.length * headDim];
        float[] sin = new float[at.length * headDim];
        int half = headDim / 2;
        for (int r = 0; r < at.length; r++) {
            for (int i = 0; i < half; i++) {
                // as transformers computes it: float32 position times float32 frequency
                float angle = (float) at[r] * invFreq[i];
                float c = (float) Math.cos(angle);
                float sn = (float) Math.sin(angle);
                cos[r * headDim + i] = c;
                cos[r * headDim + half + i] = c;
                sin[r * headDim + i] = sn;
                sin[r * headDim + half + i] = sn;
            }
        }
        // transformers casts the float32 tables to the activations' dtype
        return new NDArray[] {Precision.to(m.create(cos, shape), dtype), Precision.to(m.create(sin, shape), dtype)};
    }

    @Override
    protected NDArray computeDecode(NDArray ids, int[] past, KvCache[] caches) {
        int b = past.length;
        for (int r = 0; r < b; r++) {
            if (past[r] + 1 > positions) {
                throw new IllegalArgumentException(past[r] + 1 + " positions: " + config.file()
                        + " has max_position_embeddings " + positions);
            }
        }
        NDArray[] cs = rotaryTables(ids.getManager(), past, new Shape(b, 1, headDim));
        NDArray cosA = cs[0];
        NDArray sinA = cs[1];
        NDArray x = embed.get(ids);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray h = rmsNorm(x, l.inNorm);
            NDArray q = rope(h.matMul(l.q).reshape(b, heads, headDim), cosA, sinA);
            NDArray k = rope(h.matMul(l.k).reshape(b, kvHeads, headDim), cosA, sinA);
            NDArray v = h.matMul(l.v).reshape(b, kvHeads, headDim);
            x = x.add(Attention.step(q, k, v, caches, i, dtype).matMul(l.o));
            h = rmsNorm(x, l.postNorm);
            x = x.add(silu(h.matMul(l.gate)).mul(h.matMul(l.up)).matMul(l.down));
        }
        return Precision.to(rmsNorm(x, normW).matMul(head), DataType.FLOAT32);
    }

    @Override
    protected NDArray compute(NDArray ids, int tokens, int past, KvCache cache, int rows) {
        if (past + tokens > positions) {
            throw new IllegalArgumentException(past + tokens + " positions: " + config.file()
                    + " has max_position_embeddings " + positions);
        }
        NDManager m = ids.getManager();
        int[] at = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            at[t] = past + t;
        }
        NDArray[] cs = rotaryTables(m, at, new Shape(tokens, headDim));
        NDArray cosA = cs[0];
        NDArray sinA = cs[1];
        // one mask per forward: every layer's piece sees the same positions
        NDArray mask = cache == null ? Attention.causalMask(m, tokens, 0) : Attention.ownMask(m, cache, tokens);
        NDArray x = embed.get(ids);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray h = rmsNorm(x, l.inNorm);
            NDArray q = rope(h.matMul(l.q).reshape(tokens, heads, headDim).transpose(1, 0, 2), cosA, sinA);
            NDArray k = rope(h.matMul(l.k).reshape(tokens, kvHeads, headDim).transpose(1, 0, 2), cosA, sinA);
            NDArray v = h.matMul(l.v).reshape(tokens, kvHeads, headDim).transpose(1, 0, 2);
            NDArray a = (cache == null ? Attention.full(q, k, v, mask, dtype) : Attention.cached(q, k, v, cache, i, dtype, mask))
                    .transpose(1, 0, 2).reshape(tokens, (long) heads * headDim);
            x = x.add(a.matMul(l.o));
            h = rmsNorm(x, l.postNorm);
            x = x.add(silu(h.matMul(l.gate)).mul(h.matMul(l.up)).matMul(l.down));
        }
        return lmHead(x, h -> rmsNorm(h, normW), head, rows);
    }
}
