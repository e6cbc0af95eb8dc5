package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * An opened accelerator (or, on a CPU-only machine, the host device 0). Obtain it from
 * {@link Phoenix#device(int)}; its properties are those libphoenix chose when it opened.
 */
public final class Device {
    /** phxfs_device_info_t. */
    static final StructLayout INFO_LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("device_id"),
            JAVA_INT.withName("mode"),
            JAVA_INT.withName("engine"),
            JAVA_INT.withName("workers"),
            JAVA_LONG.withName("page_size"),
            JAVA_LONG.withName("slot_bytes"),
            JAVA_INT.withName("slots_per_worker"),
            JAVA_INT.withName("reserved"),
            MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("connector"),
            MemoryLayout.sequenceLayout(96, JAVA_BYTE).withName("name"),
            MemoryLayout.sequenceLayout(512, JAVA_BYTE).withName("why")
    ).withName("phxfs_device_info_t");

    private static final VarHandle MODE = INFO_LAYOUT.varHandle(groupElement("mode"));
    private static final VarHandle ENGINE = INFO_LAYOUT.varHandle(groupElement("engine"));
    private static final VarHandle WORKERS = INFO_LAYOUT.varHandle(groupElement("workers"));
    private static final VarHandle PAGE_SIZE = INFO_LAYOUT.varHandle(groupElement("page_size"));
    private static final VarHandle SLOT_BYTES = INFO_LAYOUT.varHandle(groupElement("slot_bytes"));
    private static final VarHandle SLOTS_PER_WORKER = INFO_LAYOUT.varHandle(groupElement("slots_per_worker"));

    private final int id;
    private final Mode mode;
    private final Engine engine;
    private final int workers;
    private final long pageSize;
    private final long slotBytes;
    private final int slotsPerWorker;
    private final String connector;
    private final String name;
    private final String why;
    private volatile boolean closed;

    private Device(int id, MemorySegment info) {
        this.id = id;
        this.mode = Mode.of((int) MODE.get(info, 0L));
        this.engine = Engine.of((int) ENGINE.get(info, 0L));
        this.workers = (int) WORKERS.get(info, 0L);
        this.pageSize = (long) PAGE_SIZE.get(info, 0L);
        this.slotBytes = (long) SLOT_BYTES.get(info, 0L);
        this.slotsPerWorker = (int) SLOTS_PER_WORKER.get(info, 0L);
        this.connector = fixedString(info, "connector");
        this.name = fixedString(info, "name");
        this.why = fixedString(info, "why");
    }

    static Device open(int id) {
        int rc = DeviceCalls.open(id);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_open(device " + id + ")", rc);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = arena.allocate(INFO_LAYOUT);
            rc = DeviceCalls.getDeviceInfo(id, info);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_get_device_info(device " + id + ")", rc);
            }
            Device d = new Device(id, info);
            // a device is opened to allocate, register and copy: link those calls now, beside
            // the hundreds of milliseconds of the open, rather than in the first timed transfer
            MemoryCalls.prelink();
            return d;
        }
    }

    /** phxfs_close for the phxfs_open of {@link #open}; a second call does nothing. Called by {@link Phoenix#close()}. */
    synchronized void close() {
        if (closed) {
            return;
        }
        int rc = DeviceCalls.close(id);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_close(device " + id + ")", rc);
        }
        closed = true;
    }

    /**
     * True once the {@link Phoenix} that opened it has been closed.
     *
     * @return true when this device may no longer be used
     */
    public boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed (its Phoenix was closed)");
        }
    }

    /** A char[N] field; read only up to its NUL, or all N bytes if libphoenix filled it. */
    private static String fixedString(MemorySegment info, String field) {
        long off = INFO_LAYOUT.byteOffset(groupElement(field));
        long cap = INFO_LAYOUT.select(groupElement(field)).byteSize();
        int len = 0;
        while (len < cap && info.get(JAVA_BYTE, off + len) != 0) {
            len++;
        }
        byte[] bytes = new byte[len];
        MemorySegment.copy(info, JAVA_BYTE, off, bytes, 0, len);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /**
     * The device id, as passed to {@link Phoenix#device(int)}.
     *
     * @return the id, {@code >= 0}
     */
    public int id() {
        return id;
    }

    /**
     * The transfer mode in use.
     *
     * @return the mode libphoenix chose for this device
     */
    public Mode mode() {
        return mode;
    }

    /**
     * The I/O engine in use.
     *
     * @return the engine that moves this device's bytes
     */
    public Engine engine() {
        return engine;
    }

    /**
     * Registration granularity (bytes).
     *
     * @return the granularity, in bytes, of registrations on this device
     */
    public long pageSize() {
        return pageSize;
    }

    /**
     * I/O worker threads serving this device.
     *
     * @return the number of worker threads
     */
    public int workers() {
        return workers;
    }

    /**
     * Size of one bounce slot (bytes).
     *
     * @return the slot size, in bytes
     */
    public long slotBytes() {
        return slotBytes;
    }

    /**
     * Bounce slots per I/O worker.
     *
     * @return the number of slots each worker owns
     */
    public int slotsPerWorker() {
        return slotsPerWorker;
    }

    /**
     * "cuda", "emu", "fake" or "host".
     *
     * @return the connector's name
     */
    public String connector() {
        return connector;
    }

    /**
     * The device name as the vendor reports it.
     *
     * @return the vendor's device name
     */
    public String name() {
        return name;
    }

    /**
     * Why faster modes were not chosen; "" when none was passed over.
     *
     * @return the reasons, or "" when the fastest mode was chosen
     */
    public String whyNotFaster() {
        return why;
    }

    /**
     * True when this device's memory is ordinary host memory (the host connector).
     *
     * @return true for the host connector
     */
    public boolean isHostMemory() {
        return "host".equals(connector);
    }

    /**
     * Allocates device memory and registers it. Closing the buffer deregisters and frees it.
     * On accelerators the memory is zeroed; on the host connector its contents are undefined
     * and the buffer's {@link RegisteredBuffer#segment()} is present.
     *
     * @param bytes the size to allocate, {@code > 0}
     * @return the registered buffer, owning the memory
     */
    public RegisteredBuffer allocate(long bytes) {
        return allocate(bytes, true);
    }

    /**
     * Like {@link #allocate(long)} without zeroing (1.2 ms per 5 GB on an H200): for callers
     * that overwrite every byte they expose before anyone reads it, such as a weight loader
     * whose reads cover the whole buffer.
     *
     * @param bytes the size to allocate, {@code > 0}
     * @return the registered buffer, owning the memory, with undefined contents
     */
    public RegisteredBuffer allocateUninitialized(long bytes) {
        return allocate(bytes, false);
    }

    private RegisteredBuffer allocate(long bytes, boolean zeroed) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocate: bytes must be > 0, was " + bytes);
        }
        checkOpen();
        MemorySegment ptr;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = zeroed ? MemoryCalls.memAlloc(id, bytes, out) : MemoryCalls.memAllocUninit(id, bytes, out);
            if (rc < 0) {
                throw PhoenixException.fromNative((zeroed ? "phxfs_mem_alloc" : "phxfs_mem_alloc_uninit")
                        + "(device " + id + ", " + bytes + " bytes)", rc);
            }
            ptr = out.get(ADDRESS, 0);
        }
        try {
            return RegisteredBuffer.registerDevice(this, ptr, bytes, true);
        } catch (RuntimeException | Error e) {
            int rc = MemoryCalls.memFree(id, ptr);
            if (rc < 0) {
                e.addSuppressed(PhoenixException.fromNative(
                        "phxfs_mem_free(device " + id + ", 0x" + Long.toHexString(ptr.address()) + ")", rc));
            }
            throw e;
        }
    }

    /**
     * Registers memory this library did not allocate: device memory from another framework
     * (a segment describing its address and length, never dereferenced by Java) or, on the
     * host connector, host memory. An exact duplicate of a registered range shares it (the
     * registration is reference counted); any other overlap fails with EINVAL. Closing the
     * buffer deregisters the range and frees nothing.
     *
     * @param range the memory to register; only its address and length are used
     * @return a buffer over {@code range} that frees nothing when closed
     */
    public RegisteredBuffer register(MemorySegment range) {
        if (range.byteSize() <= 0) {
            throw new IllegalArgumentException("register: the segment must describe at least one byte"
                    + " (use MemorySegment.ofAddress(ptr).reinterpret(len) for a raw range)");
        }
        if (!range.isNative()) {
            throw new IllegalArgumentException("register: a heap segment has no stable address");
        }
        checkOpen();
        return RegisteredBuffer.registerDevice(this, range, range.byteSize(), false);
    }

    /**
     * Uses a caller's device pointer (memory of another framework) as an I/O buffer: checks
     * with phxfs_check_device_pointer that {@code [devicePtr, devicePtr + bytes)} is memory of
     * this device, then registers it. Closing the buffer deregisters it and frees nothing: the
     * caller keeps the memory alive until the buffer is closed. Only the address of
     * {@code devicePtr} is used; Java never dereferences it.
     *
     * @throws PhoenixException EINVAL, with libphoenix's message naming what the memory is
     *                          instead (host memory, another device's memory, unknown)
     * @param devicePtr the start of the caller's device memory; only its address is used
     * @param bytes the length of the memory, {@code > 0}
     * @return a buffer over the caller's memory that frees nothing when closed
     */
    public RegisteredBuffer wrap(MemorySegment devicePtr, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("wrap: bytes must be > 0, was " + bytes);
        }
        checkOpen();
        MemorySegment ptr = MemorySegment.ofAddress(devicePtr.address());
        int rc = MemoryCalls.checkDevicePointer(id, ptr, bytes);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_check_device_pointer(device " + id + ", 0x"
                    + Long.toHexString(ptr.address()) + ", " + bytes + " bytes)", rc);
        }
        return RegisteredBuffer.registerDevice(this, ptr, bytes, false);
    }

    /**
     * Copies {@code dst.byteSize()} bytes from {@code src} at {@code srcOffset} into host memory.
     *
     * @param src the device buffer to copy from, of this device
     * @param srcOffset where in {@code src} the copy starts
     * @param dst the host memory to fill; its size is the number of bytes copied
     */
    public void copyToHost(RegisteredBuffer src, long srcOffset, MemorySegment dst) {
        checkOwn(src, "copyToHost");
        long len = dst.byteSize();
        src.checkRange(srcOffset, len, "copyToHost");
        if (len == 0) {
            return;
        }
        src.acquire();
        try {
            MemorySegment from = MemorySegment.ofAddress(src.address() + srcOffset);
            if (dst.isNative()) {
                copyToHost(src, srcOffset, dst, from, len);
            } else {
                // libphoenix needs a stable address; a heap segment gets a native bounce copy.
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment tmp = arena.allocate(len, 64);
                    copyToHost(src, srcOffset, tmp, from, len);
                    MemorySegment.copy(tmp, 0, dst, 0, len);
                }
            }
        } finally {
            src.release();
        }
    }

    private void copyToHost(RegisteredBuffer src, long srcOffset, MemorySegment dst, MemorySegment from, long len) {
        int rc = MemoryCalls.memcpyToHost(id, dst, from, len);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_memcpy_to_host(device " + id + ", " + src
                    + " offset " + srcOffset + ", " + len + " bytes)", rc);
        }
    }

    /**
     * Copies all of {@code src} (host memory) into {@code dst} at {@code dstOffset}.
     *
     * @param src the host memory to copy; its size is the number of bytes copied
     * @param dst the device buffer to copy into, of this device
     * @param dstOffset where in {@code dst} the copy starts
     */
    public void copyToDevice(MemorySegment src, RegisteredBuffer dst, long dstOffset) {
        checkOwn(dst, "copyToDevice");
        long len = src.byteSize();
        dst.checkRange(dstOffset, len, "copyToDevice");
        if (len == 0) {
            return;
        }
        dst.acquire();
        try {
            MemorySegment to = MemorySegment.ofAddress(dst.address() + dstOffset);
            if (src.isNative()) {
                copyToDevice(src, dst, dstOffset, to, len);
            } else {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment tmp = arena.allocate(len, 64);
                    MemorySegment.copy(src, 0, tmp, 0, len);
                    copyToDevice(tmp, dst, dstOffset, to, len);
                }
            }
        } finally {
            dst.release();
        }
    }

    private void copyToDevice(MemorySegment src, RegisteredBuffer dst, long dstOffset, MemorySegment to, long len) {
        int rc = MemoryCalls.memcpyToDevice(id, to, src, len);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_memcpy_to_device(device " + id + ", " + dst
                    + " offset " + dstOffset + ", " + len + " bytes)", rc);
        }
    }

    /**
     * Whether this device reads and writes {@code peer}'s memory directly (peer access over
     * NVLink or PCIe, enabled by this call), so that {@link #copyFromDevice} between them
     * takes no detour through host memory.
     *
     * @param peer another open device
     * @return true when the pair allows peer access (a device always reaches itself)
     */
    public boolean canAccessPeer(Device peer) {
        int rc = MemoryCalls.canAccessPeer(id, peer.id());
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_device_can_access_peer(" + id + ", " + peer.id() + ")", rc);
        }
        return rc == 1;
    }

    /**
     * Copies {@code length} bytes from {@code src} (memory of any open device) at
     * {@code srcOffset} into {@code dst} (memory of this device) at {@code dstOffset}, and
     * waits for them: directly where the devices allow peer access ({@link #canAccessPeer}),
     * otherwise through the source device's pinned pool, so host memory use stays bounded.
     *
     * @param src the device buffer to copy from
     * @param srcOffset where in {@code src} the copy starts
     * @param dst the device buffer to copy into, of this device
     * @param dstOffset where in {@code dst} the copy lands
     * @param length the number of bytes
     * @throws IllegalArgumentException when {@code dst} is not this device's, {@code src} is host
     *                                  memory, or a range lies outside its buffer
     */
    public void copyFromDevice(RegisteredBuffer src, long srcOffset, RegisteredBuffer dst, long dstOffset, long length) {
        checkOwn(dst, "copyFromDevice");
        if (src.isHost()) {
            throw new IllegalArgumentException("copyFromDevice: " + src + " is host memory (use copyToDevice)");
        }
        src.checkRange(srcOffset, length, "copyFromDevice");
        dst.checkRange(dstOffset, length, "copyFromDevice");
        if (length == 0) {
            return;
        }
        src.acquire();
        try {
            dst.acquire();
            try {
                int rc = MemoryCalls.memcpyPeer(id, MemorySegment.ofAddress(dst.address() + dstOffset), src.deviceId(),
                        MemorySegment.ofAddress(src.address() + srcOffset), length);
                if (rc < 0) {
                    throw PhoenixException.fromNative("phxfs_memcpy_peer(device " + src.deviceId() + " " + src + " offset "
                            + srcOffset + " -> device " + id + " " + dst + " offset " + dstOffset + ", " + length
                            + " bytes)", rc);
                }
            } finally {
                dst.release();
            }
        } finally {
            src.release();
        }
    }

    /**
     * A new stream for stream-ordered I/O ({@link PhxFile#readAsync}).
     *
     * @return a stream owned by the caller, who closes it
     */
    public DeviceStream createStream() {
        checkOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = StreamCalls.streamCreate(id, out);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_stream_create(device " + id + ")", rc);
            }
            return new DeviceStream(this, out.get(ADDRESS, 0));
        }
    }

    private void checkOwn(RegisteredBuffer buf, String what) {
        if (buf.deviceId() != id) {
            throw new IllegalArgumentException(what + ": " + buf + " does not belong to device " + id);
        }
    }

    @Override
    public String toString() {
        return "Device[" + id + ", " + connector + ", " + mode + ", " + engine
                + (name.isEmpty() ? "" : ", " + name) + "]";
    }
}
