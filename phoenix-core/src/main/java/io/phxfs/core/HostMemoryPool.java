package io.phxfs.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Host memory that is handed out again after its buffer closes, for a process that loads
 * into host memory more than once (models swapped in and out, benchmarks). Fresh anonymous
 * memory costs a page fault and the kernel's zeroing per page on its first write, which on a
 * small machine makes a copy into it several times slower than into memory already faulted
 * in; memory from this pool is faulted in once, on first use.
 *
 * <p>A buffer's contents are undefined when it comes from a mapping used before (zero on
 * first use): callers write every byte they read, as a weight loader does. Closing a buffer
 * ends every segment of it (as for {@link Host#allocateHuge}) and returns its mapping to the
 * pool, which keeps at most {@code maxBytes} of them and unmaps the rest. Closing the pool
 * unmaps what it keeps, and mappings of buffers closed later. Thread-safe.
 */
public final class HostMemoryPool implements AutoCloseable {
    private final long maxBytes;
    private final List<HugePageMemory.Mapping> free = new ArrayList<>();
    private long kept;
    private boolean closed;
    private long reused;
    private long mapped;

    HostMemoryPool(long maxBytes) {
        if (maxBytes < 0) {
            throw new IllegalArgumentException("maxBytes must be >= 0, was " + maxBytes);
        }
        this.maxBytes = maxBytes;
    }

    /**
     * {@code bytes} of 2 MiB-aligned host memory (transparent huge pages where available):
     * the smallest kept mapping that holds them, or a new one. Closing the buffer returns it.
     *
     * @param bytes the size, {@code > 0}
     * @return a buffer that owns the memory until it closes
     * @throws IllegalStateException when the pool is closed
     */
    public RegisteredBuffer allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocate: bytes must be > 0, was " + bytes);
        }
        HugePageMemory.Mapping m = take(bytes);
        if (m == null) {
            m = HugePageMemory.map(bytes);
            synchronized (this) {
                mapped++;
            }
        }
        HugePageMemory.Mapping mapping = m;
        try {
            return HugePageMemory.wrap(mapping, bytes, () -> giveBack(mapping));
        } catch (RuntimeException | Error e) {
            giveBack(mapping);
            throw e;
        }
    }

    private synchronized HugePageMemory.Mapping take(long bytes) {
        if (closed) {
            throw new IllegalStateException("allocate: the host memory pool is closed");
        }
        HugePageMemory.Mapping best = null;
        for (HugePageMemory.Mapping m : free) {
            if (m.capacity() >= bytes && (best == null || m.capacity() < best.capacity())) {
                best = m;
            }
        }
        if (best != null) {
            free.remove(best);
            kept -= best.len();
            reused++;
        }
        return best;
    }

    private void giveBack(HugePageMemory.Mapping m) {
        synchronized (this) {
            if (!closed && kept + m.len() <= maxBytes) {
                free.add(m);
                kept += m.len();
                return;
            }
        }
        m.unmap();
    }

    /**
     * Bytes of mappings kept for reuse now (buffers in use are not counted).
     *
     * @return the bytes kept
     */
    public synchronized long keptBytes() {
        return kept;
    }

    /**
     * How many allocations were served from a kept mapping.
     *
     * @return the number of reuses so far
     */
    public synchronized long reuses() {
        return reused;
    }

    /**
     * How many allocations needed a new mapping.
     *
     * @return the number of new mappings so far
     */
    public synchronized long newMappings() {
        return mapped;
    }

    /** Unmaps what the pool keeps; buffers still open are unmapped when they close. Idempotent. */
    @Override
    public void close() {
        List<HugePageMemory.Mapping> drop;
        synchronized (this) {
            closed = true;
            drop = new ArrayList<>(free);
            free.clear();
            kept = 0;
        }
        drop.forEach(HugePageMemory.Mapping::unmap);
    }

    @Override
    public synchronized String toString() {
        return "HostMemoryPool[kept " + kept + " of " + maxBytes + " bytes, " + free.size() + " mappings]";
    }
}
