package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A reusable list of reads or of writes (never both) that libphoenix runs together over its
 * worker pool. Requests may mix files, devices and host memory.
 *
 * <p>The requests live in one native {@code phxfs_io_req_t} array allocated at
 * {@link #create}; adding a request writes into it, so a batch that is {@link #clear()}ed and
 * refilled allocates nothing per request. {@link #run()} blocks; {@link #submit()} returns at
 * once and completes its future from a waiter thread. While a submitted batch is in flight
 * it cannot be changed or rerun, and the files and buffers it names cannot be closed
 * ({@link Errno#EBUSY}).
 *
 * <p>Not meant for concurrent modification from several threads; it is safe to close or
 * inspect from another thread.
 */
public final class IoBatch implements AutoCloseable {
    /** phxfs_io_req_t: 48 bytes on LP64. */
    static final StructLayout REQ_LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"),
            JAVA_INT.withName("device_id"),
            ADDRESS.withName("buf"),
            JAVA_LONG.withName("buf_offset"),
            JAVA_LONG.withName("nbytes"),
            JAVA_LONG.withName("f_offset"),
            JAVA_LONG.withName("result")
    ).withName("phxfs_io_req_t");

    private static final long REQ_SIZE = REQ_LAYOUT.byteSize();
    private static final VarHandle FD = REQ_LAYOUT.varHandle(groupElement("fd"));
    private static final VarHandle DEVICE_ID = REQ_LAYOUT.varHandle(groupElement("device_id"));
    private static final VarHandle BUF = REQ_LAYOUT.varHandle(groupElement("buf"));
    private static final VarHandle BUF_OFFSET = REQ_LAYOUT.varHandle(groupElement("buf_offset"));
    private static final VarHandle NBYTES = REQ_LAYOUT.varHandle(groupElement("nbytes"));
    private static final VarHandle F_OFFSET = REQ_LAYOUT.varHandle(groupElement("f_offset"));
    private static final VarHandle RESULT = REQ_LAYOUT.varHandle(groupElement("result"));

    private static final int NONE = 0;
    private static final int READ = 1;
    private static final int WRITE = 2;

    /**
     * phxfs_batch_wait blocks in native code, so each waiter needs a platform thread of its
     * own; daemon threads so that a forgotten batch never keeps the JVM alive.
     */
    private static final ExecutorService WAITERS = Executors.newCachedThreadPool(new ThreadFactory() {
        private final AtomicInteger next = new AtomicInteger();

        @Override
        public Thread newThread(Runnable r) {
            return Thread.ofPlatform().daemon(true).name("phoenix-batch-waiter-" + next.incrementAndGet())
                    .unstarted(r);
        }
    });

    private final int capacity;
    private final Arena arena;
    private final MemorySegment reqs;
    private final MemorySegment errnoCapture;
    private final PhxFile[] files;
    private final RegisteredBuffer[] buffers;

    private int count;
    private int direction = NONE;
    private boolean inFlight;
    /** The native handle of the submitted batch until it is destroyed; guarded by this. */
    private MemorySegment handle;
    private long lastBytesDone;
    private boolean closed;
    private boolean closeWhenIdle;

    private IoBatch(int capacity) {
        this.capacity = capacity;
        this.arena = Arena.ofShared();
        this.reqs = arena.allocate(REQ_LAYOUT, capacity);
        this.errnoCapture = arena.allocate(NativeLibrary.CAPTURE_LAYOUT);
        this.files = new PhxFile[capacity];
        this.buffers = new RegisteredBuffer[capacity];
    }

    /** A batch with room for {@code capacity} requests. */
    public static IoBatch create(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be > 0, was " + capacity);
        }
        Phoenix.open();
        return new IoBatch(capacity);
    }

    /** Adds a read of {@code nbytes} at {@code fileOffset} into {@code buf} at {@code bufOffset}. */
    public IoBatch read(PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return add(READ, file, buf, bufOffset, nbytes, fileOffset);
    }

    /** Adds a write of {@code nbytes} from {@code buf} at {@code bufOffset} to the file at {@code fileOffset}. */
    public IoBatch write(PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return add(WRITE, file, buf, bufOffset, nbytes, fileOffset);
    }

    private synchronized IoBatch add(int dir, PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes,
                                     long fileOffset) {
        checkIdle();
        if (direction != NONE && direction != dir) {
            throw new IllegalStateException("a batch is all reads or all writes; this one holds "
                    + (direction == READ ? "reads" : "writes"));
        }
        if (count == capacity) {
            throw new IllegalStateException("batch full (capacity " + capacity + ")");
        }
        buf.checkIoRange(bufOffset, nbytes, dir == READ ? "batch read" : "batch write", file.path());
        if (fileOffset < 0) {
            throw new IllegalArgumentException("negative file offset " + fileOffset + " for " + file.path());
        }
        long at = count * REQ_SIZE;
        FD.set(reqs, at, file.fd());
        DEVICE_ID.set(reqs, at, buf.deviceId());
        BUF.set(reqs, at, buf.base());
        BUF_OFFSET.set(reqs, at, bufOffset);
        NBYTES.set(reqs, at, nbytes);
        F_OFFSET.set(reqs, at, fileOffset);
        RESULT.set(reqs, at, 0L);
        files[count] = file;
        buffers[count] = buf;
        count++;
        direction = dir;
        return this;
    }

    /** Number of requests added. */
    public synchronized int size() {
        return count;
    }

    public int capacity() {
        return capacity;
    }

    /** True between {@link #submit()} and the completion of its future. */
    public synchronized boolean isInFlight() {
        return inFlight;
    }

    /** Removes all requests, for reuse (then reads or writes again). */
    public synchronized void clear() {
        checkIdle();
        Arrays.fill(files, 0, count, null);
        Arrays.fill(buffers, 0, count, null);
        count = 0;
        direction = NONE;
    }

    /**
     * Runs the batch and waits for it.
     *
     * @throws PhoenixException when the batch could not run at all; failures of single
     *                          requests are in the {@link BatchResult}
     */
    public BatchResult run() {
        int n;
        boolean write;
        synchronized (this) {
            checkIdle();
            n = count;
            write = direction == WRITE;
            if (n == 0) {
                return new BatchResult(write, new long[0], null);
            }
            acquireAll(n);
            inFlight = true;
        }
        try {
            int rc = write ? IoCalls.writeBatch(reqs, n) : IoCalls.readBatch(reqs, n);
            if (rc < 0) {
                throw PhoenixException.fromNative(batchName(write ? "phxfs_write_batch" : "phxfs_read_batch", n), rc);
            }
            return collect(write, n);
        } finally {
            finish(n);
        }
    }

    /**
     * Starts the batch and returns at once. The future completes with the per-request
     * results, or exceptionally with a {@link PhoenixException} when the batch as a whole
     * failed; by then the batch may be changed or resubmitted, and its buffers closed.
     *
     * @throws PhoenixException when libphoenix refuses to start it
     */
    public synchronized CompletableFuture<BatchResult> submit() {
        checkIdle();
        int n = count;
        boolean write = direction == WRITE;
        if (n == 0) {
            return CompletableFuture.completedFuture(new BatchResult(write, new long[0], null));
        }
        acquireAll(n);
        MemorySegment handle = write ? IoCalls.batchSubmitWrite(errnoCapture, reqs, n)
                : IoCalls.batchSubmitRead(errnoCapture, reqs, n);
        if (handle.equals(MemorySegment.NULL)) {
            int errno = NativeLibrary.captured(errnoCapture);
            String message = NativeLibrary.lastError();
            releaseAll(n);
            throw new PhoenixException(batchName(write ? "phxfs_batch_submit_write" : "phxfs_batch_submit_read", n),
                    errno != 0 ? errno : Errno.EIO, message);
        }
        inFlight = true;
        this.handle = handle;
        lastBytesDone = 0;
        CompletableFuture<BatchResult> future = new CompletableFuture<>();
        Runnable waiter = () -> await(handle, write, n, future);
        try {
            WAITERS.execute(waiter);
        } catch (RuntimeException | OutOfMemoryError e) {
            // No waiter thread could be had: wait here rather than leave the batch unreaped.
            waiter.run();
        }
        return future;
    }

    private void await(MemorySegment handle, boolean write, int n, CompletableFuture<BatchResult> future) {
        BatchResult result = null;
        Throwable failure = null;
        try {
            int rc = IoCalls.batchWait(handle);
            if (rc < 0) {
                failure = PhoenixException.fromNative(batchName("phxfs_batch_wait", n), rc);
            } else {
                result = collect(write, n);
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            synchronized (this) {
                lastBytesDone = IoCalls.batchBytesDone(handle);
                this.handle = null; // bytesDone() must not touch a destroyed handle
            }
            int rc = IoCalls.batchDestroy(handle);
            if (rc < 0 && failure == null) {
                failure = PhoenixException.fromNative(batchName("phxfs_batch_destroy", n), rc);
            }
            finish(n);
        }
        if (failure != null) {
            future.completeExceptionally(failure);
        } else {
            future.complete(result);
        }
    }

    private BatchResult collect(boolean write, int n) {
        long[] results = new long[n];
        String[] failures = null;
        for (int i = 0; i < n; i++) {
            long at = i * REQ_SIZE;
            long r = (long) RESULT.get(reqs, at);
            results[i] = r;
            if (r < 0) {
                if (failures == null) {
                    failures = new String[n];
                }
                failures[i] = files[i].describe(write ? "write" : "read", buffers[i], (long) BUF_OFFSET.get(reqs, at),
                        (long) NBYTES.get(reqs, at), (long) F_OFFSET.get(reqs, at));
            }
        }
        return new BatchResult(write, results, failures);
    }

    private void acquireAll(int n) {
        int i = 0;
        try {
            for (; i < n; i++) {
                files[i].acquire(buffers[i]);
            }
        } catch (RuntimeException e) {
            releaseAll(i);
            throw e;
        }
    }

    private void releaseAll(int n) {
        for (int i = 0; i < n; i++) {
            files[i].release(buffers[i]);
        }
    }

    private synchronized void finish(int n) {
        releaseAll(n);
        inFlight = false;
        if (closeWhenIdle) {
            closeWhenIdle = false;
            free();
        }
    }

    private void free() {
        Arrays.fill(files, 0, count, null);
        Arrays.fill(buffers, 0, count, null);
        arena.close();
    }

    private void checkIdle() {
        if (closed) {
            throw new IllegalStateException("batch is closed");
        }
        if (inFlight) {
            throw new IllegalStateException("batch is in flight");
        }
    }

    private static String batchName(String call, int n) {
        return call + "(" + n + " requests)";
    }

    /**
     * Bytes the submitted batch has moved so far (for progress without splitting the batch);
     * after it completed, its total; 0 before the first submit.
     */
    public synchronized long bytesDone() {
        return handle != null ? IoCalls.batchBytesDone(handle) : lastBytesDone;
    }

    /** Frees the request array; a batch in flight frees it when it completes. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (inFlight) {
            closeWhenIdle = true;
        } else {
            free();
        }
    }

    @Override
    public synchronized String toString() {
        return "IoBatch[" + count + "/" + capacity + (direction == NONE ? "" : direction == READ ? " reads" : " writes")
                + (inFlight ? ", in flight" : "") + (closed ? ", closed" : "") + "]";
    }
}
