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
 * (device buffers, per-layer tensors) when no memory-tier slot holds them. Allocated one at a
 * time as uses overlap, up to the bound, then reused: never an allocation per chunk.
 */
final class StagingPool implements AutoCloseable {
    private final long bytes;
    private final int count;
    private final BlockingQueue<RegisteredBuffer> free;
    private final List<RegisteredBuffer> allBuffers = new ArrayList<>();
    private volatile boolean closed;

    StagingPool(long bytes, int count) {
        this.bytes = bytes;
        this.count = count;
        this.free = new ArrayBlockingQueue<>(count);
    }

    /**
     * One more buffer while fewer than {@code count} exist, else null. One at a time, as leases
     * find none free: {@code io_threads} of them were allocated together at the first use, a
     * chunk's size each, pinned, where a few are used at once.
     */
    private synchronized RegisteredBuffer grow() {
        if (closed) {
            throw new IllegalStateException("KvCacheEngine is closed");
        }
        if (allBuffers.size() >= count) {
            return null;
        }
        RegisteredBuffer b = Phoenix.open().host().allocatePinned(bytes);
        b.segment().orElseThrow().fill((byte) 0);
        allBuffers.add(b);
        return b;
    }

    /** Buffers allocated so far. */
    synchronized int allocated() {
        return allBuffers.size();
    }

    Lease take() {
        if (closed) {
            throw new IllegalStateException("KvCacheEngine is closed");
        }
        RegisteredBuffer b = free.poll();
        if (b == null) {
            b = grow();
        }
        try {
            return new Lease(b != null ? b : free.take());
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
