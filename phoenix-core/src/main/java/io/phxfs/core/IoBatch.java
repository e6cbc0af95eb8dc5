package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A reusable list of reads and writes that libphoenix runs together over its worker pool.
 * Requests may mix files, devices, host memory and directions; they run in no particular
 * order, also when they touch the same bytes.
 *
 * <p>The requests live in one native {@code phxfs_io_req_t} array (and a byte per request
 * saying read or write) allocated at {@link #create}; adding a request writes into it, so a
 * batch that is {@link #clear()}ed and refilled allocates nothing per request.
 * {@link #run()} blocks; {@link #submitAsync()} returns at once and its future is completed
 * by libphoenix's completion callback, holding no thread while the batch runs;
 * {@link #submit()} is the same call. While a submitted batch is
 * in flight it cannot be changed or rerun, and the files and buffers it names cannot be
 * closed ({@link Errno#EBUSY}); {@link #cancel()} stops what has not started.
 *
 * <p>Not meant for concurrent modification from several threads; it is safe to close,
 * cancel or inspect from another thread.
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

    private static final byte OP_READ = 0;  // PHXFS_OP_READ
    private static final byte OP_WRITE = 1; // PHXFS_OP_WRITE


    /**
     * The completion callback of {@link #submitAsync()}: one upcall stub for all batches. Its
     * {@code arg} is a key into {@link #IN_FLIGHT}, not a pointer, so no per-batch stub and no
     * Java object ever crosses into native code.
     */
    private static final class Callback {
        static final ConcurrentHashMap<Long, Submission> IN_FLIGHT = new ConcurrentHashMap<>();
        static final AtomicLong NEXT_ID = new AtomicLong();
        static final MemorySegment STUB;

        static {
            try {
                STUB = NativeLibrary.upcall(MethodHandles.lookup().findStatic(IoBatch.class, "batchDone",
                        MethodType.methodType(void.class, MemorySegment.class, int.class, MemorySegment.class)),
                        IoCalls.BATCH_DONE_FN);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    private final int capacity;
    private final Arena arena;
    private final MemorySegment reqs;
    private final MemorySegment ops;
    private final PhxFile[] files;
    private final RegisteredBuffer[] buffers;

    private int count;
    private int writes;
    private boolean inFlight;
    /** The submitted batch until it completes; guarded by this. */
    private Submission current;
    private long lastBytesDone;
    private boolean closed;
    private boolean closeWhenIdle;

    private IoBatch(int capacity) {
        this.capacity = capacity;
        // Shared: a submitted batch completes, and may free it, on another thread.
        this.arena = Arena.ofShared();
        this.reqs = arena.allocate(REQ_LAYOUT, capacity);
        this.ops = arena.allocate(capacity);
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
        return add(OP_READ, file, buf, bufOffset, nbytes, fileOffset);
    }

    /**
     * Adds a write of {@code nbytes} from {@code buf} at {@code bufOffset} to the file at
     * {@code fileOffset}. A batch may hold reads and writes together; they are not ordered
     * against each other.
     */
    public IoBatch write(PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return add(OP_WRITE, file, buf, bufOffset, nbytes, fileOffset);
    }

    private synchronized IoBatch add(byte op, PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes,
                                     long fileOffset) {
        checkIdle();
        if (count == capacity) {
            throw new IllegalStateException("batch full (capacity " + capacity + ")");
        }
        buf.checkIoRange(bufOffset, nbytes, op == OP_READ ? "batch read" : "batch write", file.path());
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
        ops.set(JAVA_BYTE, count, op);
        files[count] = file;
        buffers[count] = buf;
        count++;
        if (op == OP_WRITE) {
            writes++;
        }
        return this;
    }

    /** Number of requests added. */
    public synchronized int size() {
        return count;
    }

    public int capacity() {
        return capacity;
    }

    /** True between a submit and the completion of its future. */
    public synchronized boolean isInFlight() {
        return inFlight;
    }

    /** Removes all requests, for reuse. */
    public synchronized void clear() {
        checkIdle();
        Arrays.fill(files, 0, count, null);
        Arrays.fill(buffers, 0, count, null);
        count = 0;
        writes = 0;
    }

    /**
     * Runs the batch and waits for it.
     *
     * @throws PhoenixException when the batch could not run at all; failures of single
     *                          requests are in the {@link BatchResult}
     */
    public BatchResult run() {
        int n;
        int w;
        synchronized (this) {
            checkIdle();
            n = count;
            w = writes;
            if (n == 0) {
                return collect(0, 0);
            }
            acquireAll(n);
            inFlight = true;
        }
        try {
            if (w == 0 || w == n) {
                int rc = w == n ? IoCalls.writeBatch(reqs, n) : IoCalls.readBatch(reqs, n);
                if (rc < 0) {
                    throw PhoenixException.fromNative(batchName(w == n ? "phxfs_write_batch" : "phxfs_read_batch", n),
                            rc);
                }
                return collect(n, w);
            }
            // Mixed: only the asynchronous entry point takes an ops array; wait right here.
            MemorySegment h = submitNative(n, w, MemorySegment.NULL, 0);
            int rc = IoCalls.batchWait(h);
            PhoenixException failure = rc < 0 ? PhoenixException.fromNative(batchName("phxfs_batch_wait", n), rc) : null;
            int drc = IoCalls.batchDestroy(h);
            if (failure == null && drc < 0) {
                failure = PhoenixException.fromNative(batchName("phxfs_batch_destroy", n), drc);
            }
            if (failure != null) {
                throw failure;
            }
            return collect(n, w);
        } finally {
            synchronized (this) {
                finish(n);
            }
        }
    }

    /**
     * The same as {@link #submitAsync()}: starts the batch and returns at once, holding no
     * thread while it runs (it used to park a platform thread per batch in
     * {@code phxfs_batch_wait}, which a server with many batches in flight cannot afford).
     *
     * @throws PhoenixException when libphoenix refuses to start it
     */
    public CompletableFuture<BatchResult> submit() {
        return start();
    }

    /**
     * Starts the batch and returns at once, holding no thread while it runs: libphoenix's
     * completion callback completes the future, with the per-request results (requests
     * stopped by {@link #cancel()} report {@code -ECANCELED}) or exceptionally with a
     * {@link PhoenixException} when the batch as a whole failed. By then the batch may be
     * changed or resubmitted, and its buffers closed.
     *
     * <p>The future completes on libphoenix's one completion thread (never an I/O worker), and
     * dependent stages added with the non-async methods ({@code thenApply}, {@code
     * whenComplete}, ...) run on it, one batch after another: a stage that blocks delays the
     * completion of other batches (not their I/O); use the {@code ...Async} variants for
     * work that may block.
     *
     * @throws PhoenixException when libphoenix refuses to start it
     */
    public CompletableFuture<BatchResult> submitAsync() {
        return start();
    }

    private CompletableFuture<BatchResult> start() {
        int n;
        int w;
        synchronized (this) {
            checkIdle();
            n = count;
            w = writes;
            if (n == 0) {
                return CompletableFuture.completedFuture(collect(0, 0));
            }
            acquireAll(n);
            inFlight = true;
        }
        // No lock is held across the native submit: the completion may run on a library
        // thread before it returns, and it takes this batch's lock to finish.
        Submission s = new Submission(n, w);
        long id = Callback.NEXT_ID.incrementAndGet();
        MemorySegment h;
        try {
            Callback.IN_FLIGHT.put(id, s);
            h = submitNative(n, w, Callback.STUB, id);
        } catch (RuntimeException | Error e) {
            Callback.IN_FLIGHT.remove(id);
            synchronized (this) {
                finish(n);
            }
            throw e;
        }
        s.handle = h;
        synchronized (this) {
            if (!s.finished) {
                current = s;
                lastBytesDone = 0;
            }
        }
        s.release(); // the submitter's hold
        return s.future;
    }

    /**
     * phxfs_batch_submit_read/_write for a batch of one direction, phxfs_batch_submit with
     * the ops array otherwise or when a callback is wanted.
     *
     * @throws PhoenixException when libphoenix refuses the batch
     */
    private MemorySegment submitNative(int n, int w, MemorySegment done, long id) {
        // Plain addresses, not the arena's segments: a completion that closes the batch
        // frees the arena, which FFM would refuse while this call still held its segments.
        MemorySegment reqsPtr = MemorySegment.ofAddress(reqs.address());
        boolean mixedOrCallback = (w != 0 && w != n) || !done.equals(MemorySegment.NULL);
        String call = mixedOrCallback ? "phxfs_batch_submit"
                : w == n ? "phxfs_batch_submit_write" : "phxfs_batch_submit_read";
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment capture = tmp.allocate(NativeLibrary.CAPTURE_LAYOUT);
            MemorySegment h = mixedOrCallback
                    ? IoCalls.batchSubmit(capture, reqsPtr, MemorySegment.ofAddress(ops.address()), n, done,
                            MemorySegment.ofAddress(id))
                    : w == n ? IoCalls.batchSubmitWrite(capture, reqsPtr, n) : IoCalls.batchSubmitRead(capture, reqsPtr, n);
            if (h.equals(MemorySegment.NULL)) {
                int errno = NativeLibrary.captured(capture);
                throw new PhoenixException(batchName(call, n), errno != 0 ? errno : Errno.EIO,
                        NativeLibrary.lastError());
            }
            return h;
        }
    }

    /** libphoenix's completion callback. Runs on a library thread; must never throw. */
    private static void batchDone(MemorySegment batch, int result, MemorySegment arg) {
        Submission s = null;
        try {
            s = Callback.IN_FLIGHT.remove(arg.address());
            if (s != null) {
                s.complete(batch, result, true);
            }
        } catch (Throwable t) {
            try {
                if (s != null) {
                    s.future.completeExceptionally(t);
                }
            } catch (Throwable ignored) {
                // Nothing is left to tell; an exception into native code would end the JVM.
            }
        }
    }

    /**
     * One submission, from submit to the destruction of its native handle. The handle is
     * destroyed by whoever lets go of it last: the submitter, the completion, or a
     * {@link #cancel()} / {@link #bytesDone()} that was using it when the batch completed.
     */
    private final class Submission {
        final int n;
        final int writes;
        final CompletableFuture<BatchResult> future = new CompletableFuture<>();
        /** The submitter's and the completion's, plus one per cancel/bytesDone in progress. */
        private final AtomicInteger holds = new AtomicInteger(2);
        volatile MemorySegment handle;
        /** Guarded by the batch; set when the completion has finished the batch. */
        boolean finished;

        Submission(int n, int writes) {
            this.n = n;
            this.writes = writes;
        }

        /** Takes a hold unless the handle is already destroyed. */
        boolean hold() {
            for (;;) {
                int h = holds.get();
                if (h == 0) {
                    return false;
                }
                if (holds.compareAndSet(h, h + 1)) {
                    return true;
                }
            }
        }

        /** @return phxfs_batch_destroy's result when this was the last hold, else 0 */
        int release() {
            return holds.decrementAndGet() == 0 ? IoCalls.batchDestroy(handle) : 0;
        }

        /** The batch has finished (callback or waiter): results, handle, batch, future, in that order. */
        void complete(MemorySegment batch, int rc, boolean onLibraryThread) {
            handle = batch;
            BatchResult result = null;
            Throwable failure = null;
            long bytesDone = 0;
            try {
                String call = onLibraryThread ? "phxfs_batch_submit" : "phxfs_batch_wait";
                if (rc < 0) {
                    // phxfs_last_error is per thread: a library thread's says nothing of this batch.
                    failure = onLibraryThread ? new PhoenixException(batchName(call, n), -rc)
                            : PhoenixException.fromNative(batchName(call, n), rc);
                } else {
                    result = collect(n, writes);
                }
                bytesDone = IoCalls.batchBytesDone(batch);
            } catch (Throwable t) {
                failure = t;
            }
            try {
                synchronized (IoBatch.this) {
                    finished = true;
                    if (current == this) {
                        current = null;
                    }
                    lastBytesDone = bytesDone;
                }
                int drc = release();
                if (drc < 0 && failure == null) {
                    failure = new PhoenixException(batchName("phxfs_batch_destroy", n), -drc);
                }
            } catch (Throwable t) {
                failure = failure != null ? failure : t;
            } finally {
                synchronized (IoBatch.this) {
                    finish(n);
                }
            }
            if (failure != null) {
                future.completeExceptionally(failure);
            } else {
                future.complete(result);
            }
        }
    }

    /**
     * Cancels what the submitted batch has not started (phxfs_batch_cancel): those requests
     * report {@code -ECANCELED} in the {@link BatchResult}, parts already moved stay moved,
     * and the future still completes as usual.
     *
     * @return the number of requests that will report ECANCELED; 0 when no batch is in flight
     */
    public int cancel() {
        Submission s;
        synchronized (this) {
            s = current;
        }
        if (s == null || !s.hold()) {
            return 0;
        }
        try {
            int rc = IoCalls.batchCancel(s.handle);
            if (rc < 0) {
                throw PhoenixException.fromNative(batchName("phxfs_batch_cancel", s.n), rc);
            }
            return rc;
        } finally {
            s.release();
        }
    }

    private BatchResult collect(int n, int w) {
        long[] results = new long[n];
        boolean[] isWrite = w != 0 && w != n ? new boolean[n] : null;
        String[] failures = null;
        for (int i = 0; i < n; i++) {
            long at = i * REQ_SIZE;
            long r = (long) RESULT.get(reqs, at);
            results[i] = r;
            boolean write = ops.get(JAVA_BYTE, i) == OP_WRITE;
            if (isWrite != null) {
                isWrite[i] = write;
            }
            if (r < 0) {
                if (failures == null) {
                    failures = new String[n];
                }
                failures[i] = files[i].describe(write ? "write" : "read", buffers[i], (long) BUF_OFFSET.get(reqs, at),
                        (long) NBYTES.get(reqs, at), (long) F_OFFSET.get(reqs, at));
            }
        }
        return new BatchResult(n > 0 && w == n, results, failures, isWrite);
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

    /** Caller holds this. */
    private void finish(int n) {
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
    public long bytesDone() {
        Submission s;
        synchronized (this) {
            s = current;
            if (s == null) {
                return lastBytesDone;
            }
        }
        if (!s.hold()) {
            synchronized (this) {
                return lastBytesDone;
            }
        }
        try {
            return IoCalls.batchBytesDone(s.handle);
        } finally {
            s.release();
        }
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
        return "IoBatch[" + count + "/" + capacity + (count == 0 ? "" : writes == 0 ? " reads"
                : writes == count ? " writes" : " reads and writes") + (inFlight ? ", in flight" : "")
                + (closed ? ", closed" : "") + "]";
    }
}
