package io.phxfs.serving.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.djl.KvCache;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvTensors;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One request's KV cache: per layer a key and a value buffer {@code [1, kv_heads, capacity,
 * head_dim]} float32 in Phoenix host memory, seen by the model as arrays over that memory (its
 * cache writes each step in place) and by the KV tier as {@link KvTensors} over the same bytes,
 * so that a retrieve fills the model's cache and a store reads it with no copy in between.
 * The buffers are freed once the arrays are gone and any store reading them has finished.
 */
final class SequenceKv implements AutoCloseable {
    private final List<RegisteredBuffer> keys = new ArrayList<>();
    private final List<RegisteredBuffer> values = new ArrayList<>();
    private final NDManager manager;
    private final KvCache cache;
    private final KvTensors tensors;
    private final int capacity;
    private CompletableFuture<?> readers = CompletableFuture.completedFuture(null);
    private boolean closed;

    SequenceKv(java.util.function.LongFunction<RegisteredBuffer> memory, CausalLmBlock block, NDManager parent, int capacity,
               KvLayout layout) {
        this.capacity = capacity;
        this.manager = parent.newSubManager();
        int layers = block.layers();
        long bytes = (long) block.kvHeads() * capacity * block.headDim() * Float.BYTES;
        NDArray[] k = new NDArray[layers];
        NDArray[] v = new NDArray[layers];
        Shape shape = new Shape(block.kvHeads(), capacity, block.headDim());
        try {
            for (int i = 0; i < layers; i++) {
                RegisteredBuffer kb = memory.apply(bytes);
                keys.add(kb);
                RegisteredBuffer vb = memory.apply(bytes);
                values.add(vb);
                k[i] = view(kb, shape);
                v[i] = view(vb, shape);
            }
            this.cache = block.newCache(k, v);
            this.tensors = KvTensors.of(layout, keys, values, 1, 0, capacity);
        } catch (RuntimeException e) {
            manager.close();
            keys.forEach(RegisteredBuffer::close);
            values.forEach(RegisteredBuffer::close);
            throw e;
        }
    }

    private NDArray view(RegisteredBuffer b, Shape shape) {
        java.nio.ByteBuffer bb = b.segment().orElseThrow(() -> new IllegalStateException("host memory without a segment"))
                .asByteBuffer().order(ByteOrder.nativeOrder());
        return manager.create(bb, shape, DataType.FLOAT32);
    }

    KvCache cache() {
        return cache;
    }

    KvTensors tensors() {
        return tensors;
    }

    int capacity() {
        return capacity;
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
        readers.whenComplete((x, e) -> {
            keys.forEach(RegisteredBuffer::close);
            values.forEach(RegisteredBuffer::close);
        });
    }
}
