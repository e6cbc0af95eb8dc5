package io.phxfs.djl;

import ai.djl.ndarray.NDArray;

/**
 * The keys and values of a prompt prefix that several sequences share, read-only: per layer
 * {@code [kv_heads, P, head_dim]} arrays over memory its maker owns (a serving engine's shared
 * block, filled once from a KV tier). Caches made over it ({@link CausalLmBlock#newCache(KvPrefix,
 * NDArray[], NDArray[])}) hold only their own positions after P, and a decode step attends to the
 * prefix once for all the sequences that share it (cascade attention): the prefix's bytes are
 * read once per step, not once per sequence, which is what bounds a batched step over long
 * shared prompts on a CPU.
 *
 * <p>It owns nothing: its maker keeps the arrays alive while caches use it.
 */
public final class KvPrefix {
    private final NDArray[] keys;
    private final NDArray[] values;
    private final int length;

    KvPrefix(NDArray[] keys, NDArray[] values) {
        this.keys = keys.clone();
        this.values = values.clone();
        this.length = (int) keys[0].getShape().get(1);
    }

    /**
     * The shared positions.
     *
     * @return P
     */
    public int length() {
        return length;
    }

    NDArray key(int layer) {
        return keys[layer];
    }

    NDArray value(int layer) {
        return values[layer];
    }
}
