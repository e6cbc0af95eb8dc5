package io.phxfs.core;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * An accelerator stream (a CUstream for cuda) for stream-ordered I/O. Operations enqueued
 * on it run in order, interleaved correctly with other work on the same stream;
 * {@link #synchronize()} waits for all of them and publishes their results.
 *
 * <p>Closing synchronises first, so that no operation outlives the buffers it writes, then
 * destroys the stream if this object created it ({@link Device#createStream}); a caller's
 * stream ({@link #wrap}) is left to the caller.
 */
public final class DeviceStream implements AutoCloseable {
    /** Issues one native enqueue call given the stream handle. */
    interface Enqueue {
        void on(MemorySegment stream);
    }

    private final Device device;
    private final MemorySegment handle;
    private final boolean owned;
    private final List<StreamOp> pending = new ArrayList<>();
    /** Buffers of queued copies, released when the stream has been synchronised past them. */
    private final List<RegisteredBuffer> held = new ArrayList<>();
    private boolean closed;

    DeviceStream(Device device, MemorySegment handle) {
        this(device, handle, true);
    }

    private DeviceStream(Device device, MemorySegment handle, boolean owned) {
        this.device = device;
        this.handle = handle;
        this.owned = owned;
    }

    /**
     * Wraps a caller's stream (a CUstream for cuda) so that stream-ordered reads, writes and
     * copies can be queued on it, ordered with the caller's own work. The stream is checked
     * with phxfs_check_stream; it is not owned: {@link #close()} synchronises it but leaves
     * destroying it to the caller, who keeps it alive until then.
     *
     * @throws IllegalArgumentException for a NULL stream (libphoenix reads NULL as "run now")
     * @throws PhoenixException         EINVAL when the stream does not belong to {@code device}
     * @param device the device the stream belongs to
     * @param stream the caller's native stream handle; not NULL
     * @return a stream that queues work on {@code stream} and does not own it
     */
    public static DeviceStream wrap(Device device, MemorySegment stream) {
        if (stream.address() == 0) {
            throw new IllegalArgumentException("wrap: NULL stream (libphoenix runs NULL-stream work at once;"
                    + " use Device.createStream() for a stream of its own)");
        }
        MemorySegment h = MemorySegment.ofAddress(stream.address());
        int rc = StreamCalls.checkStream(device.id(), h);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_check_stream(device " + device.id() + ", 0x"
                    + Long.toHexString(h.address()) + ")", rc);
        }
        return new DeviceStream(device, h, false);
    }

    /**
     * False for a caller's stream ({@link #wrap}), which close leaves alive.
     *
     * @return true when this object created the stream and {@link #close()} destroys it
     */
    public boolean ownsStream() {
        return owned;
    }

    /**
     * The device whose memory this stream's operations use.
     *
     * @return the device
     */
    public Device device() {
        return device;
    }

    /**
     * The native stream handle (a CUstream for cuda), e.g. to order other work on it.
     *
     * @return the handle, owned by this stream when {@link #ownsStream()}
     */
    public MemorySegment handle() {
        checkOpen();
        return handle;
    }

    /** Hands {@code op} to libphoenix; on every path the op either ends up pending here or is discarded. */
    synchronized void enqueue(StreamOp op, Enqueue call) {
        if (closed) {
            op.discard();
            throw new IllegalStateException(this + " is closed");
        }
        try {
            call.on(handle);
        } catch (PhoenixException e) {
            // libphoenix may have queued part of the operation before failing, and that part
            // still reads and writes the op's cells, file and buffer when the stream reaches
            // it: keep them until the stream has been synchronised.
            op.failedAtEnqueue(-e.errno());
            pending.add(op);
            throw e;
        } catch (RuntimeException | Error e) {
            // Refused by the FFM runtime before the call: nothing native refers to the op.
            op.discard();
            throw e;
        }
        pending.add(op);
    }

    /**
     * Queues a copy of {@code n} bytes from host memory {@code src} at {@code srcOffset} to
     * {@code dst} (memory of this stream's device) at {@code dstOffset}
     * (phxfs_memcpy_to_device_async). It is asynchronous when {@code src} is pinned
     * ({@link Host#allocatePinned}). Both buffers stay in use, and cannot be closed, until the
     * stream has been synchronised.
     *
     * @throws IndexOutOfBoundsException when a range falls outside its buffer
     * @param src the host memory to copy from
     * @param srcOffset where in {@code src} the copy starts
     * @param dst the device memory to copy into
     * @param dstOffset where in {@code dst} the copy starts
     * @param n the number of bytes to copy
     */
    public void copyToDevice(RegisteredBuffer src, long srcOffset, RegisteredBuffer dst, long dstOffset, long n) {
        copy(true, src, srcOffset, dst, dstOffset, n);
    }

    /**
     * Queues a copy of {@code n} bytes from {@code src} (memory of this stream's device) at
     * {@code srcOffset} to host memory {@code dst} at {@code dstOffset}
     * (phxfs_memcpy_to_host_async); the bytes are there once the stream has been
     * synchronised. See {@link #copyToDevice}.
     *
     * @param src the device memory to copy from
     * @param srcOffset where in {@code src} the copy starts
     * @param dst the host memory to copy into
     * @param dstOffset where in {@code dst} the copy starts
     * @param n the number of bytes to copy
     */
    public void copyToHost(RegisteredBuffer src, long srcOffset, RegisteredBuffer dst, long dstOffset, long n) {
        copy(false, src, srcOffset, dst, dstOffset, n);
    }

    private synchronized void copy(boolean toDevice, RegisteredBuffer src, long srcOffset, RegisteredBuffer dst,
                                   long dstOffset, long n) {
        String call = toDevice ? "copyToDevice" : "copyToHost";
        checkOpen();
        RegisteredBuffer host = toDevice ? src : dst;
        RegisteredBuffer dev = toDevice ? dst : src;
        if (!host.isHost()) {
            throw new IllegalArgumentException(call + ": " + host + " is not host memory");
        }
        if (dev.deviceId() != device.id()) {
            throw new IllegalArgumentException(call + ": " + dev + " is not on the stream's device " + device.id());
        }
        checkBounds(call, "source", src, srcOffset, n);
        checkBounds(call, "destination", dst, dstOffset, n);
        if (n == 0) {
            return;
        }
        src.acquire();
        try {
            dst.acquire();
        } catch (RuntimeException e) {
            src.release();
            throw e;
        }
        MemorySegment to = MemorySegment.ofAddress(dst.address() + dstOffset);
        MemorySegment from = MemorySegment.ofAddress(src.address() + srcOffset);
        int rc;
        try {
            rc = toDevice ? MemoryCalls.memcpyToDeviceAsync(device.id(), to, from, n, handle)
                    : MemoryCalls.memcpyToHostAsync(device.id(), to, from, n, handle);
        } catch (RuntimeException | Error e) {
            // Refused before the call (e.g. libphoenix lacks the symbol): nothing was queued.
            dst.release();
            src.release();
            throw e;
        }
        // Held until the next synchronize even on failure: as with stream I/O, do not bet the
        // buffers' lives on nothing having been queued.
        held.add(src);
        held.add(dst);
        if (rc < 0) {
            throw PhoenixException.fromNative((toDevice ? "phxfs_memcpy_to_device_async" : "phxfs_memcpy_to_host_async")
                    + "(device " + device.id() + ", " + src + " offset " + srcOffset + " -> " + dst + " offset "
                    + dstOffset + ", " + n + " bytes)", rc);
        }
    }

    private static void checkBounds(String call, String which, RegisteredBuffer buf, long offset, long n) {
        if (offset < 0 || n < 0 || offset > buf.size() || n > buf.size() - offset) {
            throw new IndexOutOfBoundsException(call + ": " + which + " range [" + offset + ", " + offset + " + " + n
                    + ") is outside " + buf + " (" + buf.size() + " bytes)");
        }
    }

    /** Waits until every operation enqueued so far has run; their {@link StreamOp#bytesDone()} are then set. */
    public synchronized void synchronize() {
        checkOpen();
        syncAndComplete();
    }

    private void syncAndComplete() {
        int rc = StreamCalls.streamSynchronize(device.id(), handle);
        if (rc < 0) {
            throw PhoenixException.fromNative("phxfs_stream_synchronize(device " + device.id() + ")", rc);
        }
        for (StreamOp op : pending) {
            op.complete();
        }
        pending.clear();
        for (RegisteredBuffer b : held) {
            b.release();
        }
        held.clear();
    }

    /**
     * Whether {@link #close()} has been called.
     *
     * @return true once the stream is closed
     */
    public synchronized boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        PhoenixException failure = null;
        try {
            syncAndComplete();
        } catch (PhoenixException e) {
            // The stream could not be drained: its operations may still run, so their cells,
            // files and buffers stay held (leaked) rather than freed under them.
            failure = e;
        }
        int rc = owned ? StreamCalls.streamDestroy(device.id(), handle) : 0;
        if (rc < 0) {
            PhoenixException e = PhoenixException.fromNative("phxfs_stream_destroy(device " + device.id() + ")", rc);
            if (failure != null) {
                e.addSuppressed(failure);
            }
            throw e;
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "DeviceStream[device " + device.id() + ", 0x" + Long.toHexString(handle.address())
                + (owned ? "" : ", caller's") + "]";
    }
}
