package io.phxfs.serving.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.djl.KvCache;
import io.phxfs.djl.TensorViews;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvTensors;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One request's KV cache: per layer a key and a value buffer {@code [1, kv_heads, capacity,
 * head_dim]} of the model's dtype in Phoenix memory (host, or the model's GPU), seen by the model as arrays over that memory (its
 * cache writes each step in place) and by the KV tier as {@link KvTensors} over the same bytes,
 * so that a retrieve fills the model's cache and a store reads it with no copy in between.
 * The buffers are freed once the arrays are gone and any store reading them has finished.
 * A cache may continue a prefix shared with other requests ({@link SharedPrefixes}): its own
 * buffers then hold the positions after it.
 *
 * <p>Closed on the engine's thread (a shared prefix's use count is that thread's).
 */
final class SequenceKv implements AutoCloseable {
    private final List<RegisteredBuffer> keys = new ArrayList<>();
    private final List<RegisteredBuffer> values = new ArrayList<>();
    private final NDManager manager;
    private final KvCache cache;
    private final KvTensors tensors;
    private final NDArray[] keyArrays;
    private final NDArray[] valueArrays;
    private final int capacity;
    /** The shared prefix this cache continues, or null; released at close. */
    private final SharedPrefixes.Block shared;
    private CompletableFuture<?> readers = CompletableFuture.completedFuture(null);
    private boolean closed;

    /**
     * A cache of {@code capacity} positions of its own, after {@code shared}'s when it has one.
     * The cache takes over one use of {@code shared}: closing it (or a failure here) releases it.
     */
    SequenceKv(java.util.function.LongFunction<RegisteredBuffer> memory, CausalLmBlock block, NDManager parent,
               SharedPrefixes.Block shared, int capacity, KvLayout layout) {
        this.capacity = capacity;
        this.shared = shared;
        NDManager own;
        try {
            own = parent.newSubManager();
        } catch (RuntimeException | Error e) {
            if (shared != null) {
                shared.release();
            }
            throw e;
        }
        this.manager = own;
        int layers = block.layers();
        long bytes = (long) block.kvHeads() * capacity * block.headDim() * block.dtype().getNumOfBytes();
        NDArray[] k = new NDArray[layers];
        NDArray[] v = new NDArray[layers];
        Shape shape = new Shape(block.kvHeads(), capacity, block.headDim());
        try {
            for (int i = 0; i < layers; i++) {
                RegisteredBuffer kb = memory.apply(bytes);
                keys.add(kb);
                RegisteredBuffer vb = memory.apply(bytes);
                values.add(vb);
                k[i] = TensorViews.view(kb, shape, block.dtype(), manager);
                v[i] = TensorViews.view(vb, shape, block.dtype(), manager);
            }
            this.keyArrays = k;
            this.valueArrays = v;
            int first = shared == null ? 0 : shared.length();
            this.cache = shared == null ? block.newCache(k, v) : block.newCache(shared.prefix(), k, v);
            this.tensors = KvTensors.of(layout, keys, values, 1, 0, capacity, first);
        } catch (RuntimeException e) {
            if (shared != null) {
                shared.release();
            }
            manager.close();
            keys.forEach(RegisteredBuffer::close);
            values.forEach(RegisteredBuffer::close);
            throw e;
        }
    }

    KvCache cache() {
        return cache;
    }

    KvTensors tensors() {
        return tensors;
    }

    /** The cache's own per-layer key arrays {@code [kv_heads, capacity, head_dim]} (a device fill writes them). */
    NDArray[] keyArrays() {
        return keyArrays;
    }

    NDArray[] valueArrays() {
        return valueArrays;
    }

    /** Positions the cache can hold, the shared prefix's included. */
    int capacity() {
        return cache.capacity();
    }

    /** The first position in this cache's own buffers: the shared prefix's length, or 0. */
    int firstPosition() {
        return shared == null ? 0 : shared.length();
    }

    /** Whether the cache continues a shared prefix. */
    boolean sharesPrefix() {
        return shared != null;
    }

    /** A store that reads the buffers until {@code f} completes: they are freed after it. */
    void readBy(CompletableFuture<?> f) {
        readers = CompletableFuture.allOf(readers, f.handle((x, e) -> null));
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        cache.close();
        manager.close();
        if (shared != null) {
            shared.release();
        }
        readers.whenComplete((x, e) -> {
            keys.forEach(RegisteredBuffer::close);
            values.forEach(RegisteredBuffer::close);
        });
    }
}
