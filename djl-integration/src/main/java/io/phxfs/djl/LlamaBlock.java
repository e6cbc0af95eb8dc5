package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.util.HashMap;
import java.util.Map;

/**
 * The Llama family from DJL operations: Llama ({@code model_type: llama}, with its optional
 * {@code attention_bias} and {@code mlp_bias}), Mistral ({@code mistral}), Qwen2 and Qwen2.5
 * ({@code qwen2}: biased query, key and value projections) and Qwen3 ({@code qwen3}: queries and
 * keys RMS-normalised per head). RMSNorm, rotary position embeddings in Hugging Face's
 * rotate-half layout ({@code default}, {@code linear} or {@code llama3} frequencies: see
 * {@link RotaryFrequencies}), grouped-query attention ({@code num_key_value_heads} below
 * {@code num_attention_heads}) and the SiLU-gated MLP. The LM head is {@code lm_head.weight},
 * or the token embedding when {@code tie_word_embeddings} is true. Layers with a sliding window
 * (Mistral, Phi-3-mini-4k, Qwen with {@code use_sliding_window}) attend over it
 * ({@link AttentionKind}), the others over every earlier position.
 * Computation is in the block's dtype (float32 unless asked), RMSNorm and softmax in float32 as
 * transformers does.
 */
public final class LlamaBlock extends CausalLmBlock {
    private final int heads;
    private final int kvHeads;
    private final int headDim;
    private final int width;
    private final int positions;
    private final LlamaFamily family;
    private final double eps;
    private final Rotary rotary;
    private final AttentionKind[] kinds;
    private final NDArray embed;
    private final NDArray head;
    private final NDArray normW;
    private final Layer[] layer;

    /** A decoder layer's weights; Phi-3's fused projections in {@code qkv} and {@code gateUp}, the others' apart. */
    private record Layer(NDArray inNorm, Linear q, Linear k, Linear v, Linear qkv, Linear o, NDArray qNorm, NDArray kNorm,
                         NDArray postNorm, Linear gate, Linear up, Linear gateUp, Linear down) {
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
        family = LlamaFamily.of(config);
        heads = config.integer("num_attention_heads");
        kvHeads = family.kvHeads(config, heads);
        width = config.integer("hidden_size");
        headDim = family.headDim(config, width, heads);
        eps = config.number("rms_norm_eps", 1e-6);
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException(config.file() + ": num_attention_heads " + heads
                    + " is not a multiple of num_key_value_heads " + kvHeads);
        }
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException(config.file() + ": head_dim " + headDim + " is odd; rotary embeddings need pairs");
        }
        String act = config.string("hidden_act").orElse("silu");
        if (!act.equals("silu")) {
            throw new IllegalArgumentException(config.file() + ": \"hidden_act\" " + act + " is not supported (silu)");
        }
        RotaryFrequencies rope = RotaryFrequencies.of(config, headDim, bf16RopeFrequencies);
        rotary = new Rotary(rope, dtype);
        positions = Math.min(config.integer("max_position_embeddings"), rope.maxPositions());
        embed = weight("model.embed_tokens.weight", Parameter.Type.WEIGHT);
        kinds = family.kinds(config, layers());
        layer = new Layer[layers()];
        for (int i = 0; i < layer.length; i++) {
            String l = "model.layers." + i + ".";
            String a = l + "self_attn.";
            boolean fused = family.fused();
            layer[i] = new Layer(weight(l + "input_layernorm.weight", Parameter.Type.GAMMA),
                    fused ? null : linear(a + "q_proj", family.qkvBias()), fused ? null : linear(a + "k_proj", family.qkvBias()),
                    fused ? null : linear(a + "v_proj", family.qkvBias()), fused ? linear(a + "qkv_proj", false) : null,
                    linear(a + "o_proj", family.outBias()),
                    family.qkNorm() ? weight(a + "q_norm.weight", Parameter.Type.GAMMA) : null,
                    family.qkNorm() ? weight(a + "k_norm.weight", Parameter.Type.GAMMA) : null,
                    weight(l + "post_attention_layernorm.weight", Parameter.Type.GAMMA),
                    fused ? null : linear(l + "mlp.gate_proj", family.mlpBias()),
                    fused ? null : linear(l + "mlp.up_proj", family.mlpBias()),
                    fused ? linear(l + "mlp.gate_up_proj", false) : null,
                    linear(l + "mlp.down_proj", family.mlpBias()));
        }
        normW = weight("model.norm.weight", Parameter.Type.GAMMA);
        boolean tied = config.bool("tie_word_embeddings", false);
        head = tied ? transposed(embed) : linear("lm_head", false).w();
    }

    /**
     * The family member the config describes.
     *
     * @return its model type and what sets it apart
     */
    LlamaFamily family() {
        return family;
    }

    /**
     * Each layer's attention: its scale and sliding window.
     *
     * @return one kind per layer (a copy)
     */
    AttentionKind[] attentionKinds() {
        return kinds.clone();
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


    private String contextLimit() {
        if (positions < config.integer("max_position_embeddings")) {
            return config.file() + " has original_max_position_embeddings " + positions
                    + " with a rope type whose frequencies change past it (dynamic, longrope): computed up to it";
        }
        return config.file() + " has max_position_embeddings " + positions;
    }

    /** Qwen3's per-head RMSNorm of {@code x [.., heads, headDim]}, or x itself for the others. */
    private NDArray headNorm(NDArray x, NDArray w) {
        return w == null ? x : rmsNorm(x, w);
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

    /** The query, key and value rows of {@code h} [rows, width]: three projections, or Phi-3's one fused and split. */
    private NDArray[] qkv(Layer l, NDArray h) {
        if (l.qkv == null) {
            return new NDArray[] {l.q.apply(h), l.k.apply(h), l.v.apply(h)};
        }
        long qd = (long) heads * headDim;
        long kd = (long) kvHeads * headDim;
        NDList parts = l.qkv.apply(h).split(new long[] {qd, qd + kd}, 1);
        return new NDArray[] {parts.get(0), parts.get(1), parts.get(2)};
    }

    /** The SiLU-gated MLP; Phi-3's gate and up projections are one, gate first. */
    private NDArray mlp(Layer l, NDArray h) {
        if (l.gateUp == null) {
            return l.down.apply(silu(l.gate.apply(h)).mul(l.up.apply(h)));
        }
        NDArray gu = l.gateUp.apply(h);
        NDList parts = gu.split(new long[] {gu.getShape().get(1) / 2}, 1);
        return l.down.apply(silu(parts.get(0)).mul(parts.get(1)));
    }

    @Override
    protected NDArray computeDecode(NDArray ids, int[] past, KvCache[] caches) {
        int b = past.length;
        for (int r = 0; r < b; r++) {
            if (past[r] + 1 > positions) {
                throw new IllegalArgumentException(past[r] + 1 + " positions: " + contextLimit());
            }
        }
        NDArray[] cs = rotary.tables(ids.getManager(), past, new Shape(b, 1, rotary.width()));
        NDArray cosA = cs[0];
        NDArray sinA = cs[1];
        Attention.PrefixMasks masks = new Attention.PrefixMasks(ids.getManager(), dtype);
        NDArray x = embed.get(ids);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray h = rmsNorm(x, l.inNorm);
            NDArray[] p = qkv(l, h);
            NDArray q = Rotary.apply(headNorm(p[0].reshape(b, heads, headDim), l.qNorm), cosA, sinA);
            NDArray k = Rotary.apply(headNorm(p[1].reshape(b, kvHeads, headDim), l.kNorm), cosA, sinA);
            NDArray v = p[2].reshape(b, kvHeads, headDim);
            x = x.add(l.o.apply(Attention.step(q, k, v, caches, i, kinds[i], dtype, masks)));
            x = x.add(mlp(l, rmsNorm(x, l.postNorm)));
        }
        return Precision.to(rmsNorm(x, normW).matMul(head), DataType.FLOAT32);
    }

    @Override
    protected NDArray compute(NDArray ids, int tokens, int past, KvCache cache, int rows) {
        if (past + tokens > positions) {
            throw new IllegalArgumentException(past + tokens + " positions: " + contextLimit());
        }
        NDManager m = ids.getManager();
        int[] at = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            at[t] = past + t;
        }
        NDArray[] cs = rotary.tables(m, at, new Shape(tokens, rotary.width()));
        NDArray cosA = cs[0];
        NDArray sinA = cs[1];
        // one mask per kind of layer per forward: every layer's piece sees the same positions
        Map<AttentionKind, Attention.Mask> masks = new HashMap<>();
        int prefix = cache == null || cache.prefix() == null ? 0 : cache.prefix().length();
        NDArray x = embed.get(ids);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray h = rmsNorm(x, l.inNorm);
            NDArray[] p = qkv(l, h);
            NDArray q = Rotary.apply(headNorm(p[0].reshape(tokens, heads, headDim), l.qNorm).transpose(1, 0, 2), cosA, sinA);
            NDArray k = Rotary.apply(headNorm(p[1].reshape(tokens, kvHeads, headDim), l.kNorm).transpose(1, 0, 2), cosA, sinA);
            NDArray v = p[2].reshape(tokens, kvHeads, headDim).transpose(1, 0, 2);
            AttentionKind kind = kinds[i];
            Attention.Mask mask = masks.computeIfAbsent(kind, kd -> Attention.mask(m, tokens, past, prefix, kd));
            NDArray a = (cache == null ? Attention.full(q, k, v, mask.own(), kind, dtype)
                    : Attention.cached(q, k, v, cache, i, dtype, mask, kind))
                    .transpose(1, 0, 2).reshape(tokens, (long) heads * headDim);
            x = x.add(l.o.apply(a));
            x = x.add(mlp(l, rmsNorm(x, l.postNorm)));
        }
        return lmHead(x, h -> rmsNorm(h, normW), head, rows);
    }
}
