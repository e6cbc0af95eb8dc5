package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.index.NDIndex;

/**
 * The keys and values of every layer for the tokens seen so far, one sequence: per layer
 * {@code [kv_heads, tokens, head_dim]} arrays of the block's dtype in a manager of the cache's own, so that
 * a generation's arrays go with the cache. Made by {@link CausalLmBlock#newCache}; close it
 * when the generation ends (closing the model closes it too).
 *
 * <p>Two kinds: a growing cache (each step concatenates its keys to the earlier ones), and a
 * preallocated one over arrays of a fixed capacity that someone else owns
 * ({@link CausalLmBlock#newCache(NDArray[], NDArray[])}), into which each step writes its
 * positions in place. The preallocated kind is what a serving engine hands to a KV tier: its
 * memory is the tier's source and destination, with no copy between.
 */
public final class KvCache implements AutoCloseable {
    private final NDManager manager;
    private final NDArray[] keys;
    private final NDArray[] values;
    /** The preallocated arrays {@code [kv_heads, capacity, head_dim]}, or null for a growing cache. */
    private final NDArray[] fixedKeys;
    private final NDArray[] fixedValues;
    private final int capacity;
    /** The shared positions before this cache's own, or null. */
    private final KvPrefix prefix;
    /** Positions in {@link #prefix} (0 without one): the fixed arrays' index 0 is this position. */
    private final int base;
    private int length;

    KvCache(NDManager parent, int layers) {
        this.manager = parent.newSubManager();
        this.keys = new NDArray[layers];
        this.values = new NDArray[layers];
        this.fixedKeys = null;
        this.fixedValues = null;
        this.capacity = -1;
        this.prefix = null;
        this.base = 0;
    }

    KvCache(NDManager parent, KvPrefix prefix, NDArray[] keys, NDArray[] values) {
        if (keys.length != values.length || keys.length == 0) {
            throw new IllegalArgumentException("a preallocated cache needs one key and one value array per layer, got "
                    + keys.length + " and " + values.length);
        }
        this.manager = parent.newSubManager();
        this.keys = new NDArray[keys.length];
        this.values = new NDArray[keys.length];
        this.fixedKeys = keys.clone();
        this.fixedValues = values.clone();
        long cap = keys[0].getShape().get(1);
        for (int i = 0; i < keys.length; i++) {
            if (keys[i].getShape().dimension() != 3 || !keys[i].getShape().equals(values[i].getShape())
                    || keys[i].getShape().get(1) != cap) {
                throw new IllegalArgumentException("layer " + i + ": key " + keys[i].getShape() + " and value "
                        + values[i].getShape() + " must both be [kv_heads, " + cap + ", head_dim]");
            }
        }
        this.prefix = prefix;
        this.base = prefix == null ? 0 : prefix.length();
        this.capacity = base + (int) cap;
        this.length = base;
    }

    /**
     * The shared prefix this cache continues, or null.
     *
     * @return the prefix
     */
    public KvPrefix prefix() {
        return prefix;
    }

    /**
     * How many positions a preallocated cache holds, its shared prefix's included.
     *
     * @return the capacity, or -1 for a growing cache
     */
    public int capacity() {
        return capacity;
    }

    /**
     * Declares that the first {@code tokens} positions of a preallocated cache hold valid keys
     * and values, written into its arrays from elsewhere (a KV tier's retrieve), or forgets the
     * positions past {@code tokens}. A cache over a shared prefix always holds the prefix.
     *
     * @param tokens the positions now valid
     * @throws IllegalStateException for a growing cache
     * @throws IllegalArgumentException outside prefix..capacity
     */
    public void setLength(int tokens) {
        if (fixedKeys == null) {
            throw new IllegalStateException("only a preallocated cache can be filled from outside");
        }
        if (tokens < base || tokens > capacity) {
            throw new IllegalArgumentException("length " + tokens + " outside " + base + ".." + capacity);
        }
        length = tokens;
        int own = tokens - base;
        for (int i = 0; i < keys.length; i++) {
            if (keys[i] != null) {
                keys[i].close();
                values[i].close();
            }
            keys[i] = own == 0 ? null : fixedKeys[i].get(new NDIndex(":, 0:{}, :", own));
            values[i] = own == 0 ? null : fixedValues[i].get(new NDIndex(":, 0:{}, :", own));
            if (keys[i] != null) {
                keys[i].attach(manager);
                values[i].attach(manager);
            }
        }
    }

    /**
     * Tokens cached.
     *
     * @return the number of positions whose keys and values are cached
     */
    public int length() {
        return length;
    }

    /** A layer's keys of this cache's own positions (after the prefix), or null before any. */
    NDArray key(int layer) {
        return keys[layer];
    }

    NDArray value(int layer) {
        return values[layer];
    }

    /**
     * Adds a step's keys and values {@code [kv_heads, T, head_dim]} of one layer after the
     * positions cached and returns the layer's keys and values over all of the cache's own
     * positions (those after its shared prefix, if it has one).
     */
    NDArray[] append(int layer, NDArray k, NDArray v) {
        if (fixedKeys == null) {
            NDArray kk = keys[layer] == null ? k : keys[layer].concat(k, 1);
            NDArray vv = values[layer] == null ? v : values[layer].concat(v, 1);
            set(layer, kk, vv);
            return new NDArray[] {kk, vv};
        }
        long t = k.getShape().get(1);
        if (length + t > capacity) {
            throw new IllegalArgumentException(length + t + " positions: the cache holds " + capacity);
        }
        int own = length - base;
        // indices built, not parsed: this runs twice per layer per sequence per step
        NDIndex write = new NDIndex().addAllDim().addSliceDim(own, own + t);
        NDIndex valid = new NDIndex().addAllDim().addSliceDim(0, own + t);
        fixedKeys[layer].set(write, k);
        fixedValues[layer].set(write, v);
        NDArray kk = fixedKeys[layer].get(valid);
        NDArray vv = fixedValues[layer].get(valid);
        set(layer, kk, vv);
        return new NDArray[] {kk, vv};
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
