package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.util.HashMap;
import java.util.Map;

/**
 * Gemma from DJL operations: Gemma ({@code model_type: gemma}), Gemma 2 ({@code gemma2}) and
 * Gemma 3's text model ({@code gemma3_text}), as transformers computes them. What sets them
 * apart from the Llama family: token embeddings scaled by sqrt(hidden_size) in the compute
 * dtype; RMSNorm scaling by {@code 1 + weight} in float32 before the cast back; a GeGLU MLP
 * ({@code gelu_pytorch_tanh}); scores scaled by {@code query_pre_attn_scalar ** -0.5} (Gemma 2
 * and 3). Gemma 2 and 3 normalise each sublayer's output as well as its input, and alternate
 * sliding-window and full attention layers ({@code layer_types}); Gemma 2 softcaps the attention
 * scores and the logits ({@code cap * tanh(x / cap)}); Gemma 3 normalises queries and keys per
 * head and gives each layer type its own rotary embedding. The LM head is the token embedding
 * unless {@code tie_word_embeddings} is false. Gemma 3's multimodal checkpoints
 * ({@code model_type: gemma3}) are computed as their text model: its config is their
 * {@code text_config} and its tensors those under {@code language_model} (transformers 4's names)
 * or {@code model.language_model} (5's); the vision tower's are loaded but not used.
 */
public final class GemmaBlock extends CausalLmBlock {
    private final GemmaFamily family;
    private final int positions;
    private final Rotary[] rotary;
    private final NDArray embed;
    private final NDArray head;
    private final NDArray normW;
    private final Layer[] layer;

    /**
     * A decoder layer's weights; the norms' as {@code 1 + weight} in float32, null where the
     * model has no such norm.
     */
    private record Layer(NDArray inNorm, Linear q, Linear k, Linear v, Linear o, NDArray qNorm, NDArray kNorm,
                         NDArray postAttnNorm, NDArray preMlpNorm, NDArray postMlpNorm, Linear gate, Linear up, Linear down) {
    }

    /**
     * Gemma over loaded weights, computing in {@code dtype}.
     *
     * @param weights the checkpoint's arrays
     * @param config its config.json
     * @param manager the model's manager
     * @param bf16RopeFrequencies round the rotary inverse frequencies to bf16, as transformers
     *        does when it runs a model in bf16 (see {@link LlamaBlock})
     * @param dtype FLOAT32, FLOAT16 or BFLOAT16
     */
    public GemmaBlock(PhoenixWeights weights, HfConfig config, NDManager manager, boolean bf16RopeFrequencies, DataType dtype) {
        super(weights, config, manager, GemmaFamily.of(config).layers(), GemmaFamily.of(config).vocab(), dtype);
        family = GemmaFamily.of(config);
        int max = family.maxPositions();
        rotary = new Rotary[family.layers()];
        Map<String, Rotary> byType = new HashMap<>();
        for (int i = 0; i < rotary.length; i++) {
            String type = family.layerTypes().get(i);
            // Gemma 3 has a rope per layer type; the others one for every layer
            String key = family.modelType().equals("gemma3_text") ? type : "";
            rotary[i] = byType.computeIfAbsent(key, t -> new Rotary(t.isEmpty()
                    ? RotaryFrequencies.of(config, family.headDim(), bf16RopeFrequencies)
                    : RotaryFrequencies.ofLayerType(config, t, family.headDim(), bf16RopeFrequencies), dtype));
            max = Math.min(max, rotary[i].frequencies().maxPositions());
        }
        positions = max;
        String root = textModel(weights);
        embed = weight(root + "embed_tokens.weight", Parameter.Type.WEIGHT);
        layer = new Layer[family.layers()];
        for (int i = 0; i < layer.length; i++) {
            String l = root + "layers." + i + ".";
            String a = l + "self_attn.";
            boolean bias = family.attentionBias();
            boolean s = family.sandwich();
            layer[i] = new Layer(norm(l + "input_layernorm.weight"), linear(a + "q_proj", bias), linear(a + "k_proj", bias),
                    linear(a + "v_proj", bias), linear(a + "o_proj", bias),
                    family.qkNorm() ? norm(a + "q_norm.weight") : null, family.qkNorm() ? norm(a + "k_norm.weight") : null,
                    norm(l + "post_attention_layernorm.weight"), s ? norm(l + "pre_feedforward_layernorm.weight") : null,
                    s ? norm(l + "post_feedforward_layernorm.weight") : null,
                    linear(l + "mlp.gate_proj", false), linear(l + "mlp.up_proj", false), linear(l + "mlp.down_proj", false));
        }
        normW = norm(root + "norm.weight");
        // Gemma ties its head to the embedding unless the config says otherwise
        head = config.bool("tie_word_embeddings", true) ? transposed(embed)
                : linear(root.equals("language_model.model.") ? "language_model.lm_head" : "lm_head", false).w();
    }

    /** Where the text model's tensors are: {@code model.}, or a multimodal checkpoint's language model. */
    private static String textModel(PhoenixWeights weights) {
        for (String root : new String[] {"model.", "model.language_model.", "language_model.model."}) {
            if (weights.contains(root + "embed_tokens.weight")) {
                return root;
            }
        }
        return "model.";
    }

    /**
     * The family member the config describes.
     *
     * @return its settings
     */
    GemmaFamily family() {
        return family;
    }

    @Override
    public int kvHeads() {
        return family.kvHeads();
    }

    @Override
    public int headDim() {
        return family.headDim();
    }

    @Override
    public int contextLength() {
        return positions;
    }

    /** A Gemma norm's weight as what it multiplies by: {@code 1 + weight} in float32, as transformers computes it. */
    private NDArray norm(String name) {
        NDArray w = Precision.to(weight(name, Parameter.Type.GAMMA), DataType.FLOAT32).add(1);
        w.attach(manager);
        return w;
    }

    /** Gemma's RMSNorm: normalised in float32, scaled by {@code 1 + weight} in float32, then cast. */
    private NDArray rmsNorm(NDArray x, NDArray onePlusW) {
        NDArray xf = Precision.to(x, DataType.FLOAT32);
        NDArray ms = xf.square().mean(new int[] {-1}, true);
        return Precision.to(xf.div(ms.add(family.eps()).sqrt()).mul(onePlusW), dtype);
    }

    private NDArray headNorm(NDArray x, NDArray w) {
        return w == null ? x : rmsNorm(x, w);
    }

    /** The gate's activation in float32, rounded once to the compute dtype, as torch's kernels compute it. */
    private NDArray activation(NDArray x) {
        NDArray xf = Precision.to(x, DataType.FLOAT32);
        NDArray y;
        if (family.activation().equals("gelu")) {
            y = ai.djl.nn.Activation.gelu(xf);
        } else {
            // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            y = xf.mul(0.5).mul(xf.add(xf.pow(3).mul(0.044715)).mul(Math.sqrt(2 / Math.PI)).tanh().add(1));
        }
        return Precision.to(y, dtype);
    }

    private NDArray mlp(Layer l, NDArray h) {
        return l.down.apply(activation(l.gate.apply(h)).mul(l.up.apply(h)));
    }

    /** The embeddings of {@code ids} times sqrt(hidden_size) rounded to the compute dtype, as transformers scales them. */
    private NDArray embedded(NDArray ids) {
        NDManager m = ids.getManager();
        NDArray normalizer = Precision.to(m.create((float) Math.sqrt(family.width())), dtype);
        return embed.get(ids).mul(normalizer);
    }

    /** A sublayer's residual step: the output normalised where the model normalises outputs (Gemma 2 and 3). */
    private NDArray residual(NDArray x, NDArray out, NDArray postNorm) {
        return x.add(postNorm == null ? out : rmsNorm(out, postNorm));
    }

    /** The MLP's input norm: Gemma 1 calls it post_attention_layernorm, Gemma 2 and 3 pre_feedforward_layernorm. */
    private NDArray mlpInput(Layer l, NDArray x) {
        return rmsNorm(x, family.sandwich() ? l.preMlpNorm : l.postAttnNorm);
    }

    /** The logits of the final hidden rows: the head, then Gemma 2's softcap in the compute dtype, then float32. */
    private NDArray logits(NDArray rows) {
        NDArray z = rmsNorm(rows, normW).matMul(head);
        double cap = family.finalSoftcap();
        if (cap > 0) {
            z = z.div(cap).tanh().mul(cap);
        }
        return Precision.to(z, DataType.FLOAT32);
    }

    private String contextLimit() {
        if (positions < family.maxPositions()) {
            return config.file() + " has original_max_position_embeddings " + positions
                    + " with a rope type whose frequencies change past it (dynamic, longrope): computed up to it";
        }
        return config.file() + " has max_position_embeddings " + positions;
    }

    @Override
    protected NDArray computeDecode(NDArray ids, int[] past, KvCache[] caches) {
        int b = past.length;
        for (int r = 0; r < b; r++) {
            if (past[r] + 1 > positions) {
                throw new IllegalArgumentException(past[r] + 1 + " positions: " + contextLimit());
            }
        }
        int heads = family.heads();
        int kvHeads = family.kvHeads();
        int headDim = family.headDim();
        Map<Rotary, NDArray[]> tables = new HashMap<>();
        Attention.PrefixMasks masks = new Attention.PrefixMasks(ids.getManager(), dtype);
        NDArray x = embedded(ids);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray[] cs = tables.computeIfAbsent(rotary[i], r -> r.tables(ids.getManager(), past, new Shape(b, 1, r.width())));
            NDArray h = rmsNorm(x, l.inNorm);
            NDArray q = Rotary.apply(headNorm(l.q.apply(h).reshape(b, heads, headDim), l.qNorm), cs[0], cs[1]);
            NDArray k = Rotary.apply(headNorm(l.k.apply(h).reshape(b, kvHeads, headDim), l.kNorm), cs[0], cs[1]);
            NDArray v = l.v.apply(h).reshape(b, kvHeads, headDim);
            NDArray a = l.o.apply(Attention.step(q, k, v, caches, i, family.kinds()[i], dtype, masks));
            x = residual(x, a, family.sandwich() ? l.postAttnNorm : null);
            x = residual(x, mlp(l, mlpInput(l, x)), l.postMlpNorm);
        }
        return logits(x);
    }

    @Override
    protected NDArray compute(NDArray ids, int tokens, int past, KvCache cache, int rows) {
        if (past + tokens > positions) {
            throw new IllegalArgumentException(past + tokens + " positions: " + contextLimit());
        }
        NDManager m = ids.getManager();
        int heads = family.heads();
        int kvHeads = family.kvHeads();
        int headDim = family.headDim();
        int[] at = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            at[t] = past + t;
        }
        // one table per rope and one mask per kind of layer per forward
        Map<Rotary, NDArray[]> tables = new HashMap<>();
        Map<AttentionKind, Attention.Mask> masks = new HashMap<>();
        int prefix = cache == null || cache.prefix() == null ? 0 : cache.prefix().length();
        NDArray x = embedded(ids);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray[] cs = tables.computeIfAbsent(rotary[i], r -> r.tables(m, at, new Shape(tokens, r.width())));
            AttentionKind kind = family.kinds()[i];
            Attention.Mask mask = masks.computeIfAbsent(kind, kd -> Attention.mask(m, tokens, past, prefix, kd));
            NDArray h = rmsNorm(x, l.inNorm);
            NDArray q = Rotary.apply(headNorm(l.q.apply(h).reshape(tokens, heads, headDim), l.qNorm).transpose(1, 0, 2), cs[0], cs[1]);
            NDArray k = Rotary.apply(headNorm(l.k.apply(h).reshape(tokens, kvHeads, headDim), l.kNorm).transpose(1, 0, 2), cs[0], cs[1]);
            NDArray v = l.v.apply(h).reshape(tokens, kvHeads, headDim).transpose(1, 0, 2);
            NDArray a = (cache == null ? Attention.full(q, k, v, mask.own(), kind, dtype)
                    : Attention.cached(q, k, v, cache, i, dtype, mask, kind))
                    .transpose(1, 0, 2).reshape(tokens, (long) heads * headDim);
            x = residual(x, l.o.apply(a), family.sandwich() ? l.postAttnNorm : null);
            x = residual(x, mlp(l, mlpInput(l, x)), l.postMlpNorm);
        }
        return lmHead(x, this::logits, rows);
    }
}
