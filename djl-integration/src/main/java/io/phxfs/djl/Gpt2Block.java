package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;

/**
 * GPT-2 ({@code model_type: gpt2}) from DJL operations: learned position embeddings,
 * pre-norm layers with biased LayerNorm, fused QKV ({@code Conv1D}, weights stored
 * {@code [in, out]}), the {@code gelu_new} MLP, and the LM head tied to the token embedding
 * ({@code transformer.wte.weight}) unless the checkpoint has its own {@code lm_head.weight}.
 */
public final class Gpt2Block extends CausalLmBlock {
    private final int heads;
    private final int width;
    private final int positions;
    private final double eps;
    private final String activation;
    private final boolean scaleAttention;
    private final NDArray wte;
    private final NDArray wpe;
    private final NDArray head;
    private final Layer[] layer;
    private final NDArray lnfW;
    private final NDArray lnfB;

    private record Layer(NDArray ln1W, NDArray ln1B, NDArray attnW, NDArray attnB, NDArray projW, NDArray projB,
                         NDArray ln2W, NDArray ln2B, NDArray fcW, NDArray fcB, NDArray mlpW, NDArray mlpB) {
    }

    /**
     * GPT-2 over loaded weights.
     *
     * @param weights the checkpoint's arrays (names as transformers saves them, with or without the {@code transformer.} prefix)
     * @param config its config.json
     * @param manager the model's manager
     */
    public Gpt2Block(PhoenixWeights weights, HfConfig config, NDManager manager) {
        this(weights, config, manager, DataType.FLOAT32);
    }

    /**
     * GPT-2 over loaded weights, computing in {@code dtype} (LayerNorm and softmax in float32).
     *
     * @param weights the checkpoint's arrays
     * @param config its config.json
     * @param manager the model's manager
     * @param dtype FLOAT32, FLOAT16 or BFLOAT16
     */
    public Gpt2Block(PhoenixWeights weights, HfConfig config, NDManager manager, DataType dtype) {
        super(weights, config, manager, config.integer("n_layer", "num_hidden_layers"), config.integer("vocab_size"), dtype);
        heads = config.integer("n_head", "num_attention_heads");
        width = config.integer("n_embd", "hidden_size");
        positions = config.integer("n_positions", "max_position_embeddings");
        eps = config.number("layer_norm_epsilon", 1e-5);
        activation = config.string("activation_function").orElse("gelu_new");
        if (!activation.equals("gelu_new") && !activation.equals("gelu_pytorch_tanh") && !activation.equals("gelu")) {
            throw new IllegalArgumentException(config.file() + ": \"activation_function\" " + activation
                    + " is not supported (gelu_new, gelu_pytorch_tanh, gelu)");
        }
        for (String unsupported : new String[] {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
                "add_cross_attention"}) {
            if (config.bool(unsupported, false)) {
                throw new IllegalArgumentException(config.file() + ": \"" + unsupported + "\" true is not supported");
            }
        }
        scaleAttention = config.bool("scale_attn_weights", true);
        if (width % heads != 0) {
            throw new IllegalArgumentException(config.file() + ": n_embd " + width + " is not a multiple of n_head " + heads);
        }
        String p = weights.contains("transformer.wte.weight") ? "transformer." : "";
        wte = weight(p + "wte.weight", Parameter.Type.WEIGHT);
        wpe = weight(p + "wpe.weight", Parameter.Type.WEIGHT);
        layer = new Layer[layers()];
        for (int i = 0; i < layer.length; i++) {
            String l = p + "h." + i + ".";
            layer[i] = new Layer(weight(l + "ln_1.weight", Parameter.Type.GAMMA), weight(l + "ln_1.bias", Parameter.Type.BETA),
                    weight(l + "attn.c_attn.weight", Parameter.Type.WEIGHT), weight(l + "attn.c_attn.bias", Parameter.Type.BIAS),
                    weight(l + "attn.c_proj.weight", Parameter.Type.WEIGHT), weight(l + "attn.c_proj.bias", Parameter.Type.BIAS),
                    weight(l + "ln_2.weight", Parameter.Type.GAMMA), weight(l + "ln_2.bias", Parameter.Type.BETA),
                    weight(l + "mlp.c_fc.weight", Parameter.Type.WEIGHT), weight(l + "mlp.c_fc.bias", Parameter.Type.BIAS),
                    weight(l + "mlp.c_proj.weight", Parameter.Type.WEIGHT), weight(l + "mlp.c_proj.bias", Parameter.Type.BIAS));
        }
        lnfW = weight(p + "ln_f.weight", Parameter.Type.GAMMA);
        lnfB = weight(p + "ln_f.bias", Parameter.Type.BETA);
        // tied: the transposed embedding is a view, no copy
        NDArray lm = weights.contains("lm_head.weight") ? weight("lm_head.weight", Parameter.Type.WEIGHT) : wte;
        head = lm.transpose();
        head.attach(this.manager);
    }

    @Override
    public int kvHeads() {
        return heads;
    }

    @Override
    public int headDim() {
        return width / heads;
    }

    @Override
    public int contextLength() {
        return positions;
    }

    /** As torch's LayerNorm kernel: statistics, weight and bias in float32, one cast back at the end. */
    private NDArray layerNorm(NDArray x, NDArray w, NDArray b) {
        NDArray xf = Precision.to(x, DataType.FLOAT32);
        NDArray mean = xf.mean(new int[] {-1}, true);
        NDArray c = xf.sub(mean);
        NDArray var = c.square().mean(new int[] {-1}, true);
        return Precision.to(c.div(var.add(eps).sqrt()).mul(Precision.to(w, DataType.FLOAT32)).add(Precision.to(b, DataType.FLOAT32)),
                dtype);
    }

    private NDArray gelu(NDArray x) {
        if (activation.equals("gelu")) {
            return ai.djl.nn.Activation.gelu(x);
        }
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        NDArray inner = x.add(x.pow(3).mul(0.044715)).mul(Math.sqrt(2 / Math.PI));
        return x.mul(0.5).mul(inner.tanh().add(1));
    }

    @Override
    protected NDArray computeDecode(NDArray ids, int[] past, KvCache[] caches) {
        int b = past.length;
        long[] pos = new long[b];
        for (int r = 0; r < b; r++) {
            if (past[r] + 1 > positions) {
                throw new IllegalArgumentException(past[r] + 1 + " positions: GPT-2 " + config.file()
                        + " has n_positions " + positions);
            }
            pos[r] = past[r];
        }
        NDManager m = ids.getManager();
        int hd = width / heads;
        NDArray x = wte.get(ids).add(wpe.get(m.create(pos)));
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray h = layerNorm(x, l.ln1W, l.ln1B);
            NDList qkv = h.matMul(l.attnW).add(l.attnB).split(3, 1);
            NDArray q = qkv.get(0).reshape(b, heads, hd);
            NDArray k = qkv.get(1).reshape(b, heads, hd);
            NDArray v = qkv.get(2).reshape(b, heads, hd);
            NDArray a = Attention.step(scaleAttention ? q : q.mul(Math.sqrt(hd)), k, v, caches, i, AttentionKind.STANDARD, dtype, null);
            x = x.add(a.matMul(l.projW).add(l.projB));
            h = layerNorm(x, l.ln2W, l.ln2B);
            x = x.add(gelu(h.matMul(l.fcW).add(l.fcB)).matMul(l.mlpW).add(l.mlpB));
        }
        return Precision.to(layerNorm(x, lnfW, lnfB).matMul(head), DataType.FLOAT32);
    }

    @Override
    protected NDArray compute(NDArray ids, int tokens, int past, KvCache cache, int rows) {
        if (past + tokens > positions) {
            throw new IllegalArgumentException(past + tokens + " positions: GPT-2 " + config.file()
                    + " has n_positions " + positions);
        }
        NDManager m = ids.getManager();
        int hd = width / heads;
        NDArray pos = m.arange((long) past, (long) past + tokens);
        NDArray x = wte.get(ids).add(wpe.get(pos));
        // one mask per forward: every layer's piece sees the same positions
        Attention.Mask mask = Attention.mask(m, tokens, past, cache == null || cache.prefix() == null ? 0 : cache.prefix().length(),
                AttentionKind.STANDARD);
        for (int i = 0; i < layer.length; i++) {
            Layer l = layer[i];
            NDArray h = layerNorm(x, l.ln1W, l.ln1B);
            NDList qkv = h.matMul(l.attnW).add(l.attnB).split(3, 1);
            NDArray q = qkv.get(0).reshape(tokens, heads, hd).transpose(1, 0, 2);
            NDArray k = qkv.get(1).reshape(tokens, heads, hd).transpose(1, 0, 2);
            NDArray v = qkv.get(2).reshape(tokens, heads, hd).transpose(1, 0, 2);
            // attention divides by sqrt(d); scale_attn_weights=false means no scaling at all
            NDArray qs = scaleAttention ? q : q.mul(Math.sqrt(hd));
            NDArray a = (cache == null ? Attention.full(qs, k, v, mask.own(), AttentionKind.STANDARD, dtype)
                    : Attention.cached(qs, k, v, cache, i, dtype, mask, AttentionKind.STANDARD))
                    .transpose(1, 0, 2).reshape(tokens, width);
            x = x.add(a.matMul(l.projW).add(l.projB));
            h = layerNorm(x, l.ln2W, l.ln2B);
            x = x.add(gelu(h.matMul(l.fcW).add(l.fcB)).matMul(l.mlpW).add(l.mlpB));
        }
        return lmHead(x, h -> layerNorm(h, lnfW, lnfB), head, rows);
    }
}
