package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A decoder-only language model as a DJL block whose parameters are Phoenix-loaded tensors:
 * input one sequence of token ids (INT64, {@code [T]} or {@code [1, T]}), output its logits,
 * {@code [T, vocab]} float32. Computation runs with DJL operations in the block's compute
 * dtype ({@link #dtype()}: float32 by default, the checkpoint's bf16 or f16 on a GPU), with
 * norms and softmax in float32 as transformers computes them; weights of that dtype are used
 * in place (zero copy), others are converted once at construction and their originals
 * released (their memory freed where it is their own).
 *
 * <p>The block belongs to the {@link PhoenixWeights} it was made from: once they are closed
 * (closing the DJL model closes them) any forward raises IllegalStateException.
 */
public abstract class CausalLmBlock extends AbstractBlock {
    /** The checkpoint's arrays. */
    protected final PhoenixWeights weights;
    /** The model's configuration. */
    protected final HfConfig config;
    /** Holds converted weights; closes with the weights' manager's parent. */
    protected final NDManager manager;
    private final int layers;
    private final int vocab;
    /** The dtype of the weights, activations and KV cache. */
    protected final DataType dtype;

    /**
     * A block over loaded weights.
     *
     * @param weights the checkpoint's arrays
     * @param config its configuration
     * @param manager where converted weights and caches live (the model's manager)
     * @param layers the number of decoder layers
     * @param vocab the vocabulary size
     */
    protected CausalLmBlock(PhoenixWeights weights, HfConfig config, NDManager manager, int layers, int vocab) {
        this(weights, config, manager, layers, vocab, DataType.FLOAT32);
    }

    /**
     * A block over loaded weights computing in {@code dtype}.
     *
     * @param weights the checkpoint's arrays
     * @param config its configuration
     * @param manager where converted weights and caches live (the model's manager)
     * @param layers the number of decoder layers
     * @param vocab the vocabulary size
     * @param dtype FLOAT32, FLOAT16 or BFLOAT16
     */
    protected CausalLmBlock(PhoenixWeights weights, HfConfig config, NDManager manager, int layers, int vocab, DataType dtype) {
        if (!Precision.supported(dtype)) {
            throw new IllegalArgumentException(config.file() + ": compute dtype " + dtype + " (float32, float16 or bfloat16)");
        }
        if (config.value("quantization_config") != null) {
            // the weights are stored quantized (FP8 with scales, GPTQ, AWQ, bitsandbytes...): read
            // as plain floats they would give wrong logits, so none of them is computed
            throw new IllegalArgumentException(config.file() + ": \"quantization_config\" is set: quantized checkpoints"
                    + " are not supported (the blocks compute from float32, float16 or bfloat16 weights)");
        }
        this.dtype = dtype;
        this.weights = weights;
        this.config = config;
        this.manager = manager.newSubManager();
        this.layers = layers;
        this.vocab = vocab;
        this.inputShapes = new Shape[] {new Shape(-1)};
        this.inputNames = java.util.List.of("input_ids");
    }

    /**
     * A weight for computation: the tensor's array itself when of the compute dtype, else a
     * converted copy.
     *
     * @param name the tensor's name
     * @param type the DJL parameter type to register it as
     * @return the array in the compute dtype
     */
    protected NDArray weight(String name, Parameter.Type type) {
        NDArray a = weights.get(name);
        String stored = TensorViews.torchDtype(a);
        if (Precision.fromName(stored) == null && !stored.equals("float64")) {
            // an integer or FP8 weight is a quantized one whose scales live elsewhere: cast, it would be wrong
            throw new IllegalArgumentException("tensor \"" + name + "\" is " + stored
                    + ": the blocks compute from float weights (float64, float32, float16, bfloat16); a quantized checkpoint?");
        }
        NDArray f = a;
        if (!Precision.is(a, dtype)) {
            f = convert(a);
            // the original is not used again: its memory goes now, where it is its own
            weights.release(name);
        }
        addParameter(Parameter.builder().setName(name).setType(type).optArray(f).optRequiresGrad(false).build());
        return f;
    }

    /**
     * A Linear module's weight {@code [out, in]} as {@code [in, out]} for {@code x.matMul} (a
     * view), with its bias when it has one.
     *
     * @param module the module's name, e.g. {@code model.layers.0.mlp.up_proj}
     * @param bias whether it has {@code .bias}
     * @return the projection
     */
    Linear linear(String module, boolean bias) {
        NDArray w = transposed(weight(module + ".weight", Parameter.Type.WEIGHT));
        return new Linear(w, bias ? weight(module + ".bias", Parameter.Type.BIAS) : null);
    }

    /**
     * A weight transposed (a view), owned by the block's manager.
     *
     * @param w the weight
     * @return its transpose
     */
    NDArray transposed(NDArray w) {
        NDArray t = w.transpose();
        t.attach(manager);
        return t;
    }

    private NDArray convert(NDArray a) {
        NDArray f = TensorViews.convert(a, dtype);
        f.attach(manager);
        f.setName(a.getName());
        return f;
    }

    /**
     * The dtype the block computes in, and its KV cache's.
     *
     * @return FLOAT32, FLOAT16 or BFLOAT16
     */
    public DataType dtype() {
        return dtype;
    }

    /**
     * The number of decoder layers.
     *
     * @return the layer count
     */
    public int layers() {
        return layers;
    }

    /**
     * The vocabulary size (the logits' width).
     *
     * @return the vocabulary size
     */
    public int vocabSize() {
        return vocab;
    }

    /**
     * The configuration the block was built from.
     *
     * @return the configuration
     */
    public HfConfig config() {
        return config;
    }

    /**
     * The Phoenix weights behind the parameters.
     *
     * @return the weights
     */
    public PhoenixWeights weights() {
        return weights;
    }

    /**
     * An empty KV cache for one sequence.
     *
     * @return a new cache; the caller closes it
     */
    public KvCache newCache() {
        checkOpen();
        return new KvCache(manager, layers);
    }

    /** {@link #compute}'s head: the logits of every position. */
    protected static final int ALL_ROWS = -1;
    /** {@link #compute}'s head: the logits of the last position only, {@code [1, vocab]}. */
    protected static final int LAST_ROW = 1;
    /** {@link #compute}'s head: no logits (a prefill piece that is not the prompt's last). */
    protected static final int NO_ROWS = 0;

    /**
     * A prefill of {@code ids} after the positions in {@code cache}, appended to it, with the
     * LM head applied to the last position only (or not at all): a serving engine needs only
     * the logits that choose the first new token, and the whole head over a long prompt would
     * be {@code T x vocab} floats of work and memory thrown away.
     *
     * @param ids token ids, INT64, {@code [T]}
     * @param cache the sequence's cache
     * @param lastLogits whether to compute the last position's logits
     * @return the last position's logits {@code [1, vocab]} in the manager of {@code ids}, or null
     * @throws IllegalStateException when the model was closed
     * @throws IllegalArgumentException when an id is outside the vocabulary or the sequence is too long
     */
    public NDArray prefill(NDArray ids, KvCache cache, boolean lastLogits) {
        checkOpen();
        long[] values = ids.toLongArray();
        if (ids.getShape().dimension() != 1 || values.length == 0) {
            throw new IllegalArgumentException("input ids: expected a non-empty [T] array, got " + ids.getShape());
        }
        for (long v : values) {
            if (v < 0 || v >= vocab) {
                throw new IllegalArgumentException("token id " + v + " outside the vocabulary [0, " + vocab + ")");
            }
        }
        try (NDScope scope = new NDScope()) {
            NDArray idx = ids.getDataType() == DataType.INT64 ? ids : ids.toType(DataType.INT64, false);
            NDArray logits = compute(idx, values.length, cache.length(), cache, lastLogits ? LAST_ROW : NO_ROWS);
            cache.advance(values.length);
            scope.suppressNotUsedWarning();
            if (logits == null) {
                return null;
            }
            NDScope.unregister(logits);
            logits.attach(ids.getManager());
            return logits;
        }
    }

    /**
     * The final norm and the LM head over the rows {@code rows} asks for (the norm is per row).
     *
     * @param x the last layer's output {@code [T, width]}
     * @param norm the final norm, applied per row
     * @param head the LM head {@code [width, vocab]}
     * @param rows {@link #ALL_ROWS}, {@link #LAST_ROW} or {@link #NO_ROWS}
     * @return the logits, or null for {@link #NO_ROWS}
     */
    protected static NDArray lmHead(NDArray x, java.util.function.UnaryOperator<NDArray> norm, NDArray head, int rows) {
        return lmHead(x, h -> Precision.to(norm.apply(h).matMul(head), DataType.FLOAT32), rows);
    }

    /**
     * The logits of the rows {@code rows} asks for, by a head that is the model's own.
     *
     * @param x the last layer's output {@code [T, width]}
     * @param logits from rows {@code [R, width]} to their float32 logits {@code [R, vocab]}
     * @param rows {@link #ALL_ROWS}, {@link #LAST_ROW} or {@link #NO_ROWS}
     * @return the logits, or null for {@link #NO_ROWS}
     */
    protected static NDArray lmHead(NDArray x, java.util.function.UnaryOperator<NDArray> logits, int rows) {
        if (rows == NO_ROWS) {
            return null;
        }
        return logits.apply(rows == LAST_ROW ? x.get(x.getShape().get(0) - 1).reshape(1, -1) : x);
    }

    /**
     * A cache over preallocated arrays, one key and one value array per layer, each
     * {@code [kv_heads, capacity, head_dim]} of the block's {@link #dtype()} in its device's memory (the
     * caller's: it may be a view over memory a KV tier reads and writes). Each forward writes
     * its positions into them in place.
     *
     * @param keys per layer, {@code [kvHeads(), capacity, headDim()]}
     * @param values per layer, the same shapes
     * @return a new, empty cache; closing it leaves the arrays to their owner
     * @throws IllegalArgumentException when the count or shapes do not fit this model
     */
    public KvCache newCache(NDArray[] keys, NDArray[] values) {
        checkOpen();
        checkCacheArrays(keys, values);
        return new KvCache(manager, null, keys, values);
    }

    /**
     * A prefix that caches can share ({@link KvPrefix}), over arrays its caller fills and owns:
     * one key and one value array per layer, each {@code [kvHeads(), P, headDim()]} of the block's {@link #dtype()}.
     *
     * @param keys per layer
     * @param values per layer, the same shapes
     * @return the prefix
     * @throws IllegalArgumentException when the count or shapes do not fit this model
     */
    public KvPrefix newPrefix(NDArray[] keys, NDArray[] values) {
        checkOpen();
        checkCacheArrays(keys, values);
        return new KvPrefix(keys, values);
    }

    /**
     * A cache that continues a shared prefix: positions {@code [0, P)} are the prefix's, those
     * from P on are written into {@code keys} and {@code values} (per layer
     * {@code [kvHeads(), capacity, headDim()]}, index 0 being position P). It starts holding P
     * positions.
     *
     * @param prefix the shared prefix, made by this block
     * @param keys per layer, the cache's own positions
     * @param values per layer, the same shapes
     * @return the cache; closing it leaves the arrays and the prefix to their owners
     */
    public KvCache newCache(KvPrefix prefix, NDArray[] keys, NDArray[] values) {
        checkOpen();
        checkCacheArrays(keys, values);
        return new KvCache(manager, prefix, keys, values);
    }

    private void checkCacheArrays(NDArray[] keys, NDArray[] values) {
        if (keys.length != layers || values.length != layers) {
            throw new IllegalArgumentException(keys.length + " key and " + values.length + " value arrays for a model of "
                    + layers + " layers");
        }
        for (NDArray[] arrays : new NDArray[][] {keys, values}) {
            for (NDArray k : arrays) {
                if (k.getShape().dimension() != 3 || k.getShape().get(0) != kvHeads() || k.getShape().get(2) != headDim()
                        || !Precision.is(k, dtype)) {
                    throw new IllegalArgumentException("cache array " + k.getShape() + " " + TensorViews.torchDtype(k)
                            + ": expected [" + kvHeads() + ", positions, " + headDim() + "] " + Precision.torchName(dtype));
                }
            }
        }
    }

    /**
     * Key/value heads per layer (the cache's first dimension).
     *
     * @return the number of key/value heads
     */
    public abstract int kvHeads();

    /**
     * The size of one head (the cache's last dimension).
     *
     * @return the head dimension
     */
    public abstract int headDim();

    /**
     * The longest sequence the model takes (its position embeddings).
     *
     * @return the context length in tokens
     */
    public abstract int contextLength();

    /**
     * The logits of {@code ids} following the positions already in {@code cache} (none when
     * null), whose keys and values are appended to the cache.
     *
     * @param ids token ids, INT64, {@code [T]} or {@code [1, T]}
     * @param cache the sequence's cache, or null to compute the whole sequence without one
     * @return the logits {@code [T, vocab]}, float32, in the manager of {@code ids}
     * @throws IllegalStateException when the model was closed
     * @throws IllegalArgumentException when an id is outside the vocabulary or the sequence is too long
     */
    public NDArray logits(NDArray ids, KvCache cache) {
        checkOpen();
        NDArray flat = ids.getShape().dimension() == 2 ? ids.reshape(-1) : ids;
        if (flat.getShape().dimension() != 1 || flat.size() == 0) {
            throw new IllegalArgumentException("input ids: expected a non-empty [T] or [1, T] array, got " + ids.getShape());
        }
        long[] values = flat.toLongArray();
        for (long v : values) {
            if (v < 0 || v >= vocab) {
                throw new IllegalArgumentException("token id " + v + " outside the vocabulary [0, " + vocab + ")");
            }
        }
        int past = cache == null ? 0 : cache.length();
        NDManager out = ids.getManager();
        try (NDScope scope = new NDScope()) {
            NDArray idx = flat.getDataType() == DataType.INT64 ? flat : flat.toType(DataType.INT64, false);
            NDArray logits = compute(idx, values.length, past, cache, ALL_ROWS);
            if (cache != null) {
                cache.advance(values.length);
            }
            NDScope.unregister(logits);
            logits.attach(out);
            scope.suppressNotUsedWarning();
            return logits;
        }
    }

    /**
     * One decode step of several sequences at once: the next token of each, at the position
     * after what its cache holds, computed as one batch (the projections and the MLP are one
     * matrix product for all rows, the attention runs per sequence over its own cache), and
     * appended to the caches. This is what makes continuous batching pay: a step of eight
     * sequences reads the weights once, not eight times.
     *
     * @param out the manager the logits are created in
     * @param ids one token id per sequence
     * @param caches the sequences' caches, in the same order
     * @return the logits {@code [B, vocab]}, float32, in {@code out}
     * @throws IllegalStateException when the model was closed
     * @throws IllegalArgumentException when an id is outside the vocabulary, the counts differ or a cache is full
     */
    public NDArray decode(NDManager out, long[] ids, KvCache[] caches) {
        checkOpen();
        if (ids.length == 0 || ids.length != caches.length) {
            throw new IllegalArgumentException(ids.length + " ids for " + caches.length + " caches");
        }
        int[] past = new int[ids.length];
        for (int r = 0; r < ids.length; r++) {
            if (ids[r] < 0 || ids[r] >= vocab) {
                throw new IllegalArgumentException("token id " + ids[r] + " outside the vocabulary [0, " + vocab + ")");
            }
            past[r] = caches[r].length();
        }
        try (NDScope scope = new NDScope()) {
            NDArray logits = computeDecode(out.create(ids), past, caches);
            for (KvCache c : caches) {
                c.advance(1);
            }
            NDScope.unregister(logits);
            logits.attach(out);
            scope.suppressNotUsedWarning();
            return logits;
        }
    }

    /**
     * A decode step of B sequences ({@link #decode}).
     *
     * @param ids token ids, INT64 {@code [B]}
     * @param past each sequence's cached positions
     * @param caches the caches, which each layer appends to
     * @return the logits {@code [B, vocab]}
     */
    protected abstract NDArray computeDecode(NDArray ids, int[] past, KvCache[] caches);

    /**
     * The forward pass.
     *
     * @param ids token ids, INT64 {@code [T]}
     * @param tokens T
     * @param past positions already in the cache
     * @param cache the cache, or null
     * @param rows which positions' logits: {@link #ALL_ROWS}, {@link #LAST_ROW} or {@link #NO_ROWS}
     * @return the logits {@code [T, vocab]} (or {@code [1, vocab]}, or null)
     */
    protected abstract NDArray compute(NDArray ids, int tokens, int past, KvCache cache, int rows);

    /** Raises once the weights are closed. */
    protected void checkOpen() {
        if (weights.isClosed()) {
            throw new IllegalStateException("the model was closed: " + weights.path() + " is no longer loaded");
        }
    }

    @Override
    protected NDList forwardInternal(ParameterStore parameterStore, NDList inputs, boolean training,
                                     PairList<String, Object> params) {
        return new NDList(logits(inputs.head(), null));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        long t = inputShapes[0].get(inputShapes[0].dimension() - 1);
        return new Shape[] {new Shape(t, vocab)};
    }
}
