package io.phxfs.core;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * An accelerator stream (a CUstream for cuda) for stream-ordered I/O. Operations enqueued
 * on it run in order, interleaved correctly with other work on the same stream;
 * {@link #synchronize()} waits for all of them and publishes their results.
 *
 * <p>Closing synchronises first, so that no operation outlives the buffers it writes.
 */
public final class DeviceStream implements AutoCloseable {
    /** Issues one native enqueue call given the stream handle. */
    interface Enqueue {
        void on(MemorySegment stream);
    }

    private final Device device;
    private final MemorySegment handle;
    private final List<StreamOp> pending = new ArrayList<>();
    private boolean closed;

    DeviceStream(Device device, MemorySegment handle) {
        this.device = device;
        this.handle = handle;
    }

    public Device device() {
        return device;
    }

    /** The native stream handle (a CUstream for cuda), e.g. to order other work on it. */
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
    }

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
        int rc = StreamCalls.streamDestroy(device.id(), handle);
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
        return "DeviceStream[device " + device.id() + ", 0x" + Long.toHexString(handle.address()) + "]";
    }
}
