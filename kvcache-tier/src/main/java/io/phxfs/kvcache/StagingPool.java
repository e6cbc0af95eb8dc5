package io.phxfs.kvcache;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * A few pinned host buffers of one chunk each, for chunks that must pass through host memory
 * (device buffers, per-layer tensors) when no memory-tier slot holds them. Allocated on first
 * use, then reused: never an allocation per chunk.
 */
final class StagingPool implements AutoCloseable {
    private final long bytes;
    private final int count;
    private final BlockingQueue<RegisteredBuffer> free;
    private final List<RegisteredBuffer> allBuffers = new ArrayList<>();
    private boolean allocated;
    private boolean closed;

    StagingPool(long bytes, int count) {
        this.bytes = bytes;
        this.count = count;
        this.free = new ArrayBlockingQueue<>(count);
    }

    private synchronized void allocate() {
        if (allocated) {
            return;
        }
        if (closed) {
            throw new IllegalStateException("KvCacheEngine is closed");
        }
        allocated = true;
        for (int i = 0; i < count; i++) {
            RegisteredBuffer b = Phoenix.open().host().allocatePinned(bytes);
            b.segment().orElseThrow().fill((byte) 0);
            allBuffers.add(b);
            free.add(b);
        }
    }

    Lease take() {
        allocate();
        try {
            return new Lease(free.take());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for a staging buffer", e);
        }
    }

    final class Lease implements AutoCloseable {
        private final RegisteredBuffer b;

        Lease(RegisteredBuffer b) {
            this.b = b;
        }

        MemorySegment segment() {
            return b.segment().orElseThrow();
        }

        @Override
        public void close() {
            free.add(b);
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (RegisteredBuffer b : allBuffers) {
            b.close();
        }
    }
}
