package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Plain host memory, device id -1: libphoenix reads and writes it directly, no registration.
 * Obtain it from {@link Phoenix#host()}.
 */
public final class Host {
    /** Alignment of {@link #allocate} buffers: enough for O_DIRECT on every common file system. */
    public static final long ALIGNMENT = 4096;

    Host() {
    }

    /** Device id of host memory. */
    public int id() {
        return -1;
    }

    /** Page-aligned native memory, zero-filled; closing the buffer frees it. */
    public RegisteredBuffer allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocate: bytes must be > 0, was " + bytes);
        }
        Arena arena = Arena.ofShared();
        try {
            return RegisteredBuffer.hostOwned(arena, arena.allocate(bytes, ALIGNMENT));
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Uses the caller's native segment as an I/O buffer. The caller keeps the memory alive
     * until the buffer and every operation on it are done; closing the buffer frees nothing.
     */
    public RegisteredBuffer wrap(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("wrap: a heap segment has no stable address; use a native segment");
        }
        return RegisteredBuffer.hostWrapped(segment);
    }

    @Override
    public String toString() {
        return "Host[-1]";
    }

    /**
     * Pinned (page-locked, accelerator-registered) host memory for the caller's own
     * asynchronous copies ({@link DeviceStream#copyToDevice}, {@link DeviceStream#copyToHost});
     * outside the devices' pinned pools. On a machine without an accelerator it is ordinary
     * page-aligned memory. The buffer owns it: closing frees it (phxfs_host_free_pinned).
     */
    public RegisteredBuffer allocatePinned(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocatePinned: bytes must be > 0, was " + bytes);
        }
        MemorySegment ptr;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(java.lang.foreign.ValueLayout.ADDRESS);
            int rc = MemoryCalls.hostAllocPinned(bytes, out);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_host_alloc_pinned(" + bytes + " bytes)", rc);
            }
            ptr = out.get(java.lang.foreign.ValueLayout.ADDRESS, 0);
        }
        try {
            return RegisteredBuffer.hostPinned(ptr, bytes);
        } catch (RuntimeException | Error e) {
            MemoryCalls.hostFreePinned(ptr);
            throw e;
        }
    }
}
