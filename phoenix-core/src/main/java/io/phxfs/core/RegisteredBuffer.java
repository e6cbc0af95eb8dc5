package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * Memory that libphoenix may read into or write from: registered device memory
 * ({@link Device#allocate}, {@link Device#register}, {@link Device#wrap}) or host memory
 * ({@link Host}, including pinned host memory from {@link Host#allocatePinned}).
 *
 * <p>Closing releases what the buffer owns (deregisters, frees); a second close does nothing.
 * Closing while an I/O operation still uses the buffer (an async batch, a stream op not yet
 * synchronised) throws {@link PhoenixException} with {@link Errno#EBUSY} and leaves the
 * buffer open. Any use after close throws {@link IllegalStateException}.
 */
public final class RegisteredBuffer implements AutoCloseable {
    private enum Kind {
        /** Allocated by phxfs_mem_alloc and registered: close deregisters and frees. */
        DEVICE_OWNED,
        /** Registered caller memory: close deregisters. */
        DEVICE_REGISTERED,
        /** Host memory from our own arena: close frees it. */
        HOST_OWNED,
        /** Caller's host memory: close only forgets it. */
        HOST_WRAPPED,
        /** Pinned host memory from phxfs_host_alloc_pinned: close frees it with phxfs_host_free_pinned. */
        HOST_PINNED
    }

    private final Kind kind;
    private final int deviceId;
    private final long address;
    private final long size;
    /** The pointer handed to libphoenix calls; for host memory the segment itself, so that FFM keeps it alive during a call. */
    private final MemorySegment base;
    private final long targetAddress;
    /** Present only where Java may touch the bytes. */
    private final MemorySegment hostView;
    /** Owns host memory (HOST_OWNED) or scopes {@link #hostView} so that it dies with the buffer. */
    private final Arena arena;
    private final UseGate gate = new UseGate();

    private RegisteredBuffer(Kind kind, int deviceId, long address, long size, MemorySegment base,
                             long targetAddress, MemorySegment hostView, Arena arena) {
        this.kind = kind;
        this.deviceId = deviceId;
        this.address = address;
        this.size = size;
        this.base = base;
        this.targetAddress = targetAddress;
        this.hostView = hostView;
        this.arena = arena;
    }

    @SuppressWarnings("restricted") // the host connector's device memory is host memory of exactly this size
    static RegisteredBuffer registerDevice(Device device, MemorySegment range, long size, boolean owned) {
        int dev = device.id();
        MemorySegment ptr = MemorySegment.ofAddress(range.address());
        long target;
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment out = tmp.allocate(ADDRESS);
            int rc = MemoryCalls.regmem(dev, ptr, size, out);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_regmem(device " + dev + ", 0x"
                        + Long.toHexString(ptr.address()) + ", " + size + " bytes)", rc);
            }
            target = out.get(ADDRESS, 0).address();
        }
        Arena viewArena = null;
        MemorySegment view = null;
        if (device.isHostMemory()) {
            viewArena = Arena.ofShared();
            view = ptr.reinterpret(size, viewArena, null);
        }
        return new RegisteredBuffer(owned ? Kind.DEVICE_OWNED : Kind.DEVICE_REGISTERED, dev, ptr.address(),
                size, ptr, target, view, viewArena);
    }

    static RegisteredBuffer hostOwned(Arena arena, MemorySegment seg) {
        return new RegisteredBuffer(Kind.HOST_OWNED, -1, seg.address(), seg.byteSize(), seg, seg.address(), seg, arena);
    }

    @SuppressWarnings("restricted") // phxfs_host_alloc_pinned returned exactly this many bytes
    static RegisteredBuffer hostPinned(MemorySegment ptr, long size) {
        // The view dies with the buffer, so Java cannot touch the memory once it is freed.
        Arena viewArena = Arena.ofShared();
        MemorySegment view = MemorySegment.ofAddress(ptr.address()).reinterpret(size, viewArena, null);
        return new RegisteredBuffer(Kind.HOST_PINNED, -1, ptr.address(), size, view, ptr.address(), view, viewArena);
    }

    static RegisteredBuffer hostWrapped(MemorySegment seg) {
        return new RegisteredBuffer(Kind.HOST_WRAPPED, -1, seg.address(), seg.byteSize(), seg, seg.address(), seg, null);
    }

    /**
     * The device this memory belongs to; -1 for host memory.
     *
     * @return the device id, or -1
     */
    public int deviceId() {
        return deviceId;
    }

    /**
     * True for host memory (device id -1), which libphoenix uses without registration.
     *
     * @return true when the memory is host memory
     */
    public boolean isHost() {
        return deviceId < 0;
    }

    /**
     * The start address (a device pointer for device memory).
     *
     * @return the address
     */
    public long address() {
        gate.checkOpen(this);
        return address;
    }

    /**
     * The address libphoenix uses for this range (phxfs_regmem's target_addr).
     *
     * @return the target address
     */
    public long targetAddress() {
        gate.checkOpen(this);
        return targetAddress;
    }

    /**
     * The buffer's length.
     *
     * @return the size in bytes
     */
    public long size() {
        return size;
    }

    /**
     * The bytes as a segment, present when Java may access them directly: host memory and
     * device memory of the host connector. Device memory of an accelerator (or the fake
     * connector) is reached with {@link Device#copyToHost} / {@link Device#copyToDevice}.
     *
     * @return the segment, or empty for accelerator memory
     */
    public Optional<MemorySegment> segment() {
        gate.checkOpen(this);
        return Optional.ofNullable(hostView);
    }

    /**
     * Whether {@link #close()} has been called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return gate.isClosed();
    }

    /** Pointer argument for libphoenix. */
    MemorySegment base() {
        return base;
    }

    void acquire() {
        gate.acquire(this);
    }

    void release() {
        gate.release();
    }

    /**
     * Checks {@code [offset, offset + length)} against the buffer. Host memory has no
     * registry in libphoenix to catch an overrun, so Java is the only guard there; for device
     * memory the registry decides, which also lets a request span adjacent registrations.
     * {@code call} and {@code subject} only name the failure (no string is built on success:
     * this runs for every request).
     */
    void checkIoRange(long offset, long length, String call, Object subject) {
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException(call + " " + subject + ": negative offset " + offset
                    + " or length " + length);
        }
        if (isHost() && outside(offset, length)) {
            throw outsideError(offset, length, call + " " + subject);
        }
    }

    /** Strict bounds check against this buffer, for operations libphoenix does not check. */
    void checkRange(long offset, long length, String what) {
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException(what + ": negative offset " + offset + " or length " + length);
        }
        if (outside(offset, length)) {
            throw outsideError(offset, length, what);
        }
    }

    private boolean outside(long offset, long length) {
        return offset > size || length > size - offset;
    }

    private PhoenixException outsideError(long offset, long length, String what) {
        return new PhoenixException(what + ": [" + offset + ", " + offset + "+" + length + ") of " + this,
                Errno.EFAULT, "outside the buffer's " + size + " bytes");
    }

    @Override
    public void close() {
        if (!gate.beginClose(this)) {
            return;
        }
        switch (kind) {
            case DEVICE_OWNED, DEVICE_REGISTERED -> closeDevice();
            case HOST_OWNED -> {
                try {
                    arena.close();
                } catch (IllegalStateException e) {
                    // A caller's own downcall on another thread still holds the segment.
                    gate.abortClose();
                    throw new PhoenixException("close " + this + ": segment in use", Errno.EBUSY, e.getMessage());
                }
            }
            case HOST_PINNED -> closePinned();
            case HOST_WRAPPED -> {
            }
        }
    }

    private void closePinned() {
        try {
            arena.close();
        } catch (IllegalStateException e) {
            gate.abortClose();
            throw new PhoenixException("close " + this + ": segment in use", Errno.EBUSY, e.getMessage());
        }
        int rc = MemoryCalls.hostFreePinned(MemorySegment.ofAddress(address));
        if (rc < 0) {
            // The view is gone, so the buffer cannot be reopened: report and leak.
            throw PhoenixException.fromNative("phxfs_host_free_pinned(" + this + ")", rc);
        }
    }

    private void closeDevice() {
        int rc = MemoryCalls.deregmem(deviceId, base, size);
        if (rc < 0) {
            PhoenixException e = PhoenixException.fromNative("phxfs_deregmem(" + this + ")", rc);
            gate.abortClose();
            throw e;
        }
        if (arena != null) {
            try {
                arena.close();
            } catch (IllegalStateException e) {
                // Freeing now could corrupt a caller's in-progress access; leaking is the safe side.
                throw new PhoenixException("close " + this + ": segment in use, memory not freed",
                        Errno.EBUSY, e.getMessage());
            }
        }
        if (kind == Kind.DEVICE_OWNED) {
            rc = MemoryCalls.memFree(deviceId, base);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_mem_free(" + this + ")", rc);
            }
        }
    }

    @Override
    public String toString() {
        return (isHost() ? "host buffer" : "device " + deviceId + " buffer") + " 0x" + Long.toHexString(address)
                + "+" + size;
    }
}
