package io.phxfs.core;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.phxfs.core.NativeLibrary.CAPTURE_ERRNO;
import static io.phxfs.core.NativeLibrary.downcall;
import static io.phxfs.core.NativeLibrary.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** phoenix.h: synchronous I/O, batches, asynchronous batches and their completion callback. */
final class IoCalls {
    private static final FunctionDescriptor IO_SYNC = FunctionDescriptor.of(JAVA_LONG,
            JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
    private static final FunctionDescriptor IO_BATCH = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor SUBMIT = FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor ON_BATCH = FunctionDescriptor.of(JAVA_INT, ADDRESS);

    private static final MethodHandle READ = downcall("phxfs_read", IO_SYNC);
    private static final MethodHandle WRITE = downcall("phxfs_write", IO_SYNC);
    private static final MethodHandle READ_BATCH = downcall("phxfs_read_batch", IO_BATCH);
    private static final MethodHandle WRITE_BATCH = downcall("phxfs_write_batch", IO_BATCH);
    private static final MethodHandle BATCH_SUBMIT_READ = downcall("phxfs_batch_submit_read", SUBMIT, CAPTURE_ERRNO);
    private static final MethodHandle BATCH_SUBMIT_WRITE = downcall("phxfs_batch_submit_write", SUBMIT, CAPTURE_ERRNO);
    private static final MethodHandle BATCH_WAIT = downcall("phxfs_batch_wait", ON_BATCH);
    private static final MethodHandle BATCH_POLL = downcall("phxfs_batch_poll", ON_BATCH);
    private static final MethodHandle BATCH_BYTES_DONE = downcall("phxfs_batch_bytes_done",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    private static final MethodHandle BATCH_DESTROY = downcall("phxfs_batch_destroy", ON_BATCH);
    private static final MethodHandle BATCH_TIMES = downcall("phxfs_batch_times",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));

    // core-2 calls
    private static final MethodHandle BATCH_SUBMIT = downcall("phxfs_batch_submit",
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS), CAPTURE_ERRNO);
    private static final MethodHandle BATCH_CANCEL = downcall("phxfs_batch_cancel", ON_BATCH);

    /** phxfs_batch_done_fn: void (*)(phxfs_batch_t *batch, int result, void *arg). */
    static final FunctionDescriptor BATCH_DONE_FN = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS);

    private IoCalls() {
    }

    static long read(int fd, int dev, MemorySegment buf, long bufOffset, long nbytes, long fileOffset) {
        try {
            return (long) READ.invokeExact(fd, dev, buf, bufOffset, nbytes, fileOffset);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long write(int fd, int dev, MemorySegment buf, long bufOffset, long nbytes, long fileOffset) {
        try {
            return (long) WRITE.invokeExact(fd, dev, buf, bufOffset, nbytes, fileOffset);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int readBatch(MemorySegment reqs, int n) {
        try {
            return (int) READ_BATCH.invokeExact(reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int writeBatch(MemorySegment reqs, int n) {
        try {
            return (int) WRITE_BATCH.invokeExact(reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment batchSubmitRead(MemorySegment capture, MemorySegment reqs, int n) {
        try {
            return (MemorySegment) BATCH_SUBMIT_READ.invokeExact(capture, reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment batchSubmitWrite(MemorySegment capture, MemorySegment reqs, int n) {
        try {
            return (MemorySegment) BATCH_SUBMIT_WRITE.invokeExact(capture, reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchWait(MemorySegment batch) {
        try {
            return (int) BATCH_WAIT.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchPoll(MemorySegment batch) {
        try {
            return (int) BATCH_POLL.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long batchBytesDone(MemorySegment batch) {
        try {
            return (long) BATCH_BYTES_DONE.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** phxfs_batch_times into {@code out} (three longs: queued, first task, last task ended). */
    static int batchTimes(MemorySegment batch, MemorySegment out) {
        try {
            return (int) BATCH_TIMES.invokeExact(batch, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchDestroy(MemorySegment batch) {
        try {
            return (int) BATCH_DESTROY.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** phxfs_batch_submit: ops and done may be NULL; returns NULL with errno in {@code capture} on failure. */
    static MemorySegment batchSubmit(MemorySegment capture, MemorySegment reqs, MemorySegment ops, int n,
                                     MemorySegment done, MemorySegment arg) {
        try {
            return (MemorySegment) BATCH_SUBMIT.invokeExact(capture, reqs, ops, n, done, arg);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchCancel(MemorySegment batch) {
        try {
            return (int) BATCH_CANCEL.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
