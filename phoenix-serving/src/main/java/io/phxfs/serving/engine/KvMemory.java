package io.phxfs.serving.engine;

import io.phxfs.core.HostMemoryPool;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;

/**
 * Where the requests' KV caches live: host memory from a pool that keeps what it handed out
 * (a fresh mapping's first touch, the kernel zeroing every page, would be part of every
 * request's time to first token: about 0.2 s for an 80 MB cache on the 2-core build machine),
 * or the memory of the GPU the model computes on, which the tier reads and fills through
 * Phoenix.
 */
final class KvMemory implements AutoCloseable {
    private final HostMemoryPool pool;
    private final Integer device;

    private KvMemory(HostMemoryPool pool, Integer device) {
        this.pool = pool;
        this.device = device;
    }

    /** Host memory, keeping up to {@code keepBytes} of it for reuse. */
    static KvMemory host(long keepBytes) {
        return new KvMemory(Phoenix.open().host().pool(keepBytes), null);
    }

    /** The memory of GPU {@code id}. */
    static KvMemory device(int id) {
        return new KvMemory(null, id);
    }

    /**
     * {@code bytes} for a cache; the caller closes the buffer. Device memory is not zeroed: a
     * cache's positions are written before they are read.
     */
    RegisteredBuffer allocate(long bytes) {
        return pool != null ? pool.allocate(bytes) : Phoenix.open().device(device).allocateUninitialized(bytes);
    }

    /** Whether the caches are in a GPU's memory. */
    boolean onDevice() {
        return device != null;
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.close();
        }
    }
}
