package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;

/**
 * The keys and values of every layer for the tokens seen so far, one sequence: per layer
 * {@code [kv_heads, tokens, head_dim]} float32 arrays in a manager of the cache's own, so that
 * a generation's arrays go with the cache. Made by {@link CausalLmBlock#newCache}; close it
 * when the generation ends (closing the model closes it too).
 */
public final class KvCache implements AutoCloseable {
    private final NDManager manager;
    private final NDArray[] keys;
    private final NDArray[] values;
    private int length;

    KvCache(NDManager parent, int layers) {
        this.manager = parent.newSubManager();
        this.keys = new NDArray[layers];
        this.values = new NDArray[layers];
    }

    /**
     * Tokens cached.
     *
     * @return the number of positions whose keys and values are cached
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

    /** Replaces a layer's arrays with longer ones (the old ones are closed). */
    void set(int layer, NDArray k, NDArray v) {
        NDScope.unregister(k, v);
        k.attach(manager);
        v.attach(manager);
        if (keys[layer] != null) {
            keys[layer].close();
            values[layer].close();
        }
        keys[layer] = k;
        values[layer] = v;
    }

    /** Counts the positions of a step once every layer has them. */
    void advance(int tokens) {
        length += tokens;
    }

    /** Frees the cached arrays; a second close does nothing. */
    @Override
    public void close() {
        manager.close();
    }
}
