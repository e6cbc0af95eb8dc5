package io.phxfs.core;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One stream-ordered read or write ({@link PhxFile#readAsync}, {@link PhxFile#writeAsync}).
 * Its result is known once the {@link DeviceStream} has been synchronised.
 *
 * <p>libphoenix reads the operation's parameters through pointers, some only when the
 * stream reaches the operation, and writes the result through one; those cells live in this
 * object's own native block until the stream has passed it.
 */
public final class StreamOp {
    // Cell offsets: size_t nbytes, off_t buf_offset, off_t f_offset, ssize_t bytes_done.
    private static final long NBYTES = 0;
    private static final long BUF_OFFSET = 8;
    private static final long FILE_OFFSET = 16;
    private static final long BYTES_DONE = 24;

    private final PhxFile file;
    private final RegisteredBuffer buffer;
    private final boolean write;
    private final long nbytes;
    private final long bufOffset;
    private final long fileOffset;
    private final NativeBlock block;
    private final MemorySegment cells;
    private volatile boolean done;
    private long bytesDone;
    /** The negative errno of a failed enqueue, 0 when it was accepted. */
    private long enqueueError;

    StreamOp(PhxFile file, RegisteredBuffer buffer, boolean write, long nbytes, long bufOffset, long fileOffset) {
        this.file = file;
        this.buffer = buffer;
        this.write = write;
        this.nbytes = nbytes;
        this.bufOffset = bufOffset;
        this.fileOffset = fileOffset;
        // Not a shared arena: the stream may be synchronised, and so the cells freed, from
        // another thread, and closing a shared arena costs a handshake with every thread (NativeBlock).
        this.block = NativeBlock.allocate(32);
        this.cells = block.segment();
        cells.set(JAVA_LONG, NBYTES, nbytes);
        cells.set(JAVA_LONG, BUF_OFFSET, bufOffset);
        cells.set(JAVA_LONG, FILE_OFFSET, fileOffset);
        cells.set(JAVA_LONG, BYTES_DONE, 0L);
    }

    MemorySegment nbytesCell() {
        return cells.asSlice(NBYTES, 8);
    }

    MemorySegment bufOffsetCell() {
        return cells.asSlice(BUF_OFFSET, 8);
    }

    MemorySegment fileOffsetCell() {
        return cells.asSlice(FILE_OFFSET, 8);
    }

    MemorySegment bytesDoneCell() {
        return cells.asSlice(BYTES_DONE, 8);
    }

    /** The stream has passed this operation: take the result and let go of the cells, file and buffer. */
    void complete() {
        if (done) {
            return; // the cells are freed
        }
        bytesDone = enqueueError != 0 ? enqueueError : cells.get(JAVA_LONG, BYTES_DONE);
        block.close();
        file.release(buffer);
        done = true;
    }

    void failedAtEnqueue(long negativeErrno) {
        enqueueError = negativeErrno;
    }

    /** The op never reached libphoenix: nothing native refers to the cells. */
    void discard() {
        block.close();
        file.release(buffer);
    }

    /**
     * True once the stream has been synchronised past this operation.
     *
     * @return true when the result is known
     */
    public boolean isDone() {
        return done;
    }

    /**
     * Bytes moved (short only at end of file), or a negative errno.
     *
     * @throws IllegalStateException before the stream has been synchronised
     * @return the byte count or negative errno
     */
    public long bytesDone() {
        if (!done) {
            throw new IllegalStateException(this + ": synchronize the stream first");
        }
        return bytesDone;
    }

    /**
     * Whether the operation failed.
     *
     * @return true when {@link #bytesDone()} is a negative errno
     * @throws IllegalStateException before the stream has been synchronised
     */
    public boolean failed() {
        return bytesDone() < 0;
    }

    /**
     * Throws the failure as a {@link PhoenixException}; returns the byte count otherwise.
     *
     * @return the bytes moved
     * @throws PhoenixException when the operation failed
     */
    public long throwIfFailed() {
        long n = bytesDone();
        if (n < 0) {
            throw new PhoenixException(describe(), (int) -n);
        }
        return n;
    }

    private String describe() {
        return file.describe(write ? "phxfs_write_stream" : "phxfs_read_stream", buffer, bufOffset, nbytes, fileOffset);
    }

    @Override
    public String toString() {
        return "StreamOp[" + describe() + (done ? " -> " + bytesDone : ", pending") + "]";
    }
}
