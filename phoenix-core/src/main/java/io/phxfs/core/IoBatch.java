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
 * <pre>{@code
 * try (IoBatch batch = IoBatch.create()) {
 *     batch.add(IoRequest.read(file, 0, buf, 0, file.size()))
 *          .add(IoRequest.read(other, 4096, buf, file.size(), 1 << 20));
 *     batch.run().throwIfFailed();
 * }
 * }</pre>
 *
 * <p>The requests live in one native {@code phxfs_io_req_t} array (and a byte per request
 * saying read or write); adding a request writes into it, and a full array is replaced by
 * one twice its size, so a batch holds as many requests as it is given (up to
 * {@link Integer#MAX_VALUE}, the C API's count) without its size being guessed up front.
 * A batch that is {@link #clear()}ed and refilled keeps its array and allocates nothing per
 * request. One request may be as large as the buffer: libphoenix splits it across its
 * workers itself, so a whole file is one request, not one per 64 MiB.
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
    private static final int REQ_WORDS = (int) (REQ_SIZE / JAVA_LONG.byteSize());
    private static final int RESULT_WORD = (int) (REQ_LAYOUT.byteOffset(groupElement("result")) / JAVA_LONG.byteSize());
    /** Requests {@link #collect} copies out at a time. */
    private static final int COLLECT_BLOCK = 4096;
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

    /** Default initial capacity of {@link #create()}. */
    private static final int DEFAULT_CAPACITY = 16;

    /**
     * The request array and what keeps its files and buffers alive. Growing swaps in a new
     * one, only while no batch is in flight; a submission keeps the one it started with, so
     * its completion never reads a field that a later add could have replaced.
     */
    private record Store(NativeBlock block, MemorySegment reqs, MemorySegment ops, MemorySegment times,
                         PhxFile[] files, RegisteredBuffer[] buffers) {
        static Store allocate(int capacity) {
            // Freed explicitly, not by a shared arena: a submitted batch completes, and may
            // free it, on another thread, and closing a shared arena costs a handshake with
            // every thread of the process on each batch (NativeBlock).
            long reqBytes = REQ_SIZE * capacity;
            long timesBytes = JAVA_LONG.byteSize() * 3;
            // the Java arrays first: when one cannot be had, no native memory is left behind
            PhxFile[] files = new PhxFile[capacity];
            RegisteredBuffer[] buffers = new RegisteredBuffer[capacity];
            NativeBlock block = NativeBlock.allocate(reqBytes + timesBytes + capacity);
            MemorySegment all = block.segment();
            return new Store(block, all.asSlice(0, reqBytes), all.asSlice(reqBytes + timesBytes, capacity),
                    all.asSlice(reqBytes, timesBytes), files, buffers);
        }

        int capacity() {
            return files.length;
        }
    }

    /** Guarded by this. */
    private Store store;

    private int count;
    private int writes;
    private boolean inFlight;
    /** The submitted batch until it completes; guarded by this. */
    private Submission current;
    private long lastBytesDone;
    private boolean closed;
    private boolean closeWhenIdle;

    private IoBatch(int capacity) {
        this.store = Store.allocate(capacity);
    }

    /**
     * An empty batch that grows as requests are added.
     *
     * @return the batch; close it to free its request array
     */
    public static IoBatch create() {
        return create(DEFAULT_CAPACITY);
    }

    /**
     * An empty batch with room for {@code capacity} requests before it first grows: a size
     * hint that saves the copies of growing, never a limit.
     *
     * @param capacity the initial number of requests, {@code > 0}
     * @return the batch; close it to free its request array
     * @throws IllegalArgumentException when {@code capacity <= 0}
     */
    public static IoBatch create(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be > 0, was " + capacity);
        }
        Phoenix.open();
        return new IoBatch(capacity);
    }

    /**
     * Adds a request; reads and writes may be mixed, and run in no order against each other.
     *
     * @param request what to move, built by {@link IoRequest#read} or {@link IoRequest#write}
     * @return this batch, for chaining
     * @throws PhoenixException         EFAULT when the range lies outside the buffer
     * @throws IllegalStateException    when the batch is closed or in flight, or already holds
     *                                  {@link Integer#MAX_VALUE} requests
     */
    public IoBatch add(IoRequest request) {
        return add(request.write() ? OP_WRITE : OP_READ, request.file(), request.buffer(), request.bufferOffset(),
                request.length(), request.fileOffset());
    }

    /**
     * Adds a read of {@code nbytes} at {@code fileOffset} into {@code buf} at {@code bufOffset}.
     * The order is pread's, {@code (fd, buf, count, offset)}, with the buffer offset after the
     * buffer.
     *
     * @param file       the file, open for reading
     * @param buf        where the bytes go
     * @param bufOffset  the first byte of {@code buf} to fill
     * @param nbytes     how many bytes
     * @param fileOffset the first byte of the file to read
     * @return this batch, for chaining
     * @deprecated three {@code long}s in a row invite swapping them; use
     *             {@code add(IoRequest.read(file, fileOffset, buf, bufOffset, nbytes))}, which names them
     */
    @Deprecated(since = "0.1")
    public IoBatch read(PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return add(OP_READ, file, buf, bufOffset, nbytes, fileOffset);
    }

    /**
     * Adds a write of {@code nbytes} from {@code buf} at {@code bufOffset} to the file at
     * {@code fileOffset}, in pwrite's order like {@link #read(PhxFile, RegisteredBuffer, long, long, long)}.
     *
     * @param file       the file, open for writing
     * @param buf        where the bytes come from
     * @param bufOffset  the first byte of {@code buf} to write
     * @param nbytes     how many bytes
     * @param fileOffset the first byte of the file to write
     * @return this batch, for chaining
     * @deprecated use {@code add(IoRequest.write(file, fileOffset, buf, bufOffset, nbytes))}
     */
    @Deprecated(since = "0.1")
    public IoBatch write(PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return add(OP_WRITE, file, buf, bufOffset, nbytes, fileOffset);
    }

    private synchronized IoBatch add(byte op, PhxFile file, RegisteredBuffer buf, long bufOffset, long nbytes,
                                     long fileOffset) {
        checkIdle();
        buf.checkIoRange(bufOffset, nbytes, op == OP_READ ? "batch read" : "batch write", file.path());
        if (fileOffset < 0) {
            throw new IllegalArgumentException("negative file offset " + fileOffset + " for " + file.path());
        }
        if (count == store.capacity()) {
            grow();
        }
        Store st = store;
        MemorySegment reqs = st.reqs();
        long at = count * REQ_SIZE;
        FD.set(reqs, at, file.fd());
        DEVICE_ID.set(reqs, at, buf.deviceId());
        BUF.set(reqs, at, buf.base());
        BUF_OFFSET.set(reqs, at, bufOffset);
        NBYTES.set(reqs, at, nbytes);
        F_OFFSET.set(reqs, at, fileOffset);
        RESULT.set(reqs, at, 0L);
        st.ops().set(JAVA_BYTE, count, op);
        st.files()[count] = file;
        st.buffers()[count] = buf;
        count++;
        if (op == OP_WRITE) {
            writes++;
        }
        return this;
    }

    /** Caller holds this and has checked that no batch is in flight. */
    private void grow() {
        int cap = store.capacity();
        if (cap == Integer.MAX_VALUE) {
            throw new IllegalStateException("batch full: it holds " + cap
                    + " requests, the most one batch can (the C API counts them in an int); split the work into"
                    + " several batches, or make each request larger (libphoenix splits a request itself)");
        }
        Store bigger = Store.allocate((int) Math.min(Integer.MAX_VALUE, 2L * cap));
        MemorySegment.copy(store.reqs(), 0, bigger.reqs(), 0, count * REQ_SIZE);
        MemorySegment.copy(store.ops(), 0, bigger.ops(), 0, count);
        System.arraycopy(store.files(), 0, bigger.files(), 0, count);
        System.arraycopy(store.buffers(), 0, bigger.buffers(), 0, count);
        store.block().close();
        store = bigger;
    }

    /**
     * Number of requests added.
     *
     * @return the count since creation or the last {@link #clear()}
     */
    public synchronized int size() {
        return count;
    }

    /**
     * Requests the batch holds before it next grows its request array.
     *
     * @return the current capacity, at least the one given to {@link #create(int)}
     */
    public synchronized int capacity() {
        return store.capacity();
    }

    /**
     * True between a submit and the completion of its future.
     *
     * @return whether a submitted run has not completed yet
     */
    public synchronized boolean isInFlight() {
        return inFlight;
    }

    /** Removes all requests, for reuse. */
    public synchronized void clear() {
        checkIdle();
        Arrays.fill(store.files(), 0, count, null);
        Arrays.fill(store.buffers(), 0, count, null);
        count = 0;
        writes = 0;
    }

    /**
     * Runs the batch and waits for it.
     *
     * @throws PhoenixException when the batch could not run at all; failures of single
     *                          requests are in the {@link BatchResult}
     * @return the per-request results
     */
    public BatchResult run() {
        int n;
        int w;
        Store st;
        synchronized (this) {
            checkIdle();
            n = count;
            w = writes;
            st = store;
            if (n == 0) {
                return collect(st, 0, 0);
            }
            acquireAll(st, n);
            inFlight = true;
        }
        try {
            if (w == 0 || w == n) {
                int rc = w == n ? IoCalls.writeBatch(st.reqs(), n) : IoCalls.readBatch(st.reqs(), n);
                if (rc < 0) {
                    throw PhoenixException.fromNative(batchName(w == n ? "phxfs_write_batch" : "phxfs_read_batch", n),
                            rc);
                }
                return collect(st, n, w);
            }
            // Mixed: only the asynchronous entry point takes an ops array; wait right here.
            MemorySegment h = submitNative(st, n, w, MemorySegment.NULL, 0);
            int rc = IoCalls.batchWait(h);
            PhoenixException failure = rc < 0 ? PhoenixException.fromNative(batchName("phxfs_batch_wait", n), rc) : null;
            int drc = IoCalls.batchDestroy(h);
            if (failure == null && drc < 0) {
                failure = PhoenixException.fromNative(batchName("phxfs_batch_destroy", n), drc);
            }
            if (failure != null) {
                throw failure;
            }
            return collect(st, n, w);
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
     * @return a future completed with the per-request results
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
     * @return a future completed with the per-request results
     */
    public CompletableFuture<BatchResult> submitAsync() {
        return start();
    }

    private CompletableFuture<BatchResult> start() {
        int n;
        int w;
        Store st;
        synchronized (this) {
            checkIdle();
            n = count;
            w = writes;
            st = store;
            if (n == 0) {
                return CompletableFuture.completedFuture(collect(st, 0, 0));
            }
            acquireAll(st, n);
            inFlight = true;
        }
        // No lock is held across the native submit: the completion may run on a library
        // thread before it returns, and it takes this batch's lock to finish.
        Submission s = new Submission(st, n, w);
        long id = Callback.NEXT_ID.incrementAndGet();
        MemorySegment h;
        try {
            Callback.IN_FLIGHT.put(id, s);
            h = submitNative(st, n, w, Callback.STUB, id);
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
    private MemorySegment submitNative(Store st, int n, int w, MemorySegment done, long id) {
        // Plain addresses: a completion may close the batch, and free its block, before this
        // call returns; the call passes the addresses only.
        MemorySegment reqsPtr = MemorySegment.ofAddress(st.reqs().address());
        boolean mixedOrCallback = (w != 0 && w != n) || !done.equals(MemorySegment.NULL);
        String call = mixedOrCallback ? "phxfs_batch_submit"
                : w == n ? "phxfs_batch_submit_write" : "phxfs_batch_submit_read";
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment capture = tmp.allocate(NativeLibrary.CAPTURE_LAYOUT);
            MemorySegment h = mixedOrCallback
                    ? IoCalls.batchSubmit(capture, reqsPtr, MemorySegment.ofAddress(st.ops().address()), n, done,
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
        final Store store;
        final int n;
        final int writes;
        final CompletableFuture<BatchResult> future = new CompletableFuture<>();
        /** The submitter's and the completion's, plus one per cancel/bytesDone in progress. */
        private final AtomicInteger holds = new AtomicInteger(2);
        volatile MemorySegment handle;
        /** Guarded by the batch; set when the completion has finished the batch. */
        boolean finished;

        Submission(Store store, int n, int writes) {
            this.store = store;
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
                    result = collect(store, n, writes);
                    // before the handle goes: when its transfers ran, on System.nanoTime's clock
                    if (IoCalls.batchTimes(batch, store.times()) == 0) {
                        long[] t = new long[3];
                        MemorySegment.copy(store.times(), JAVA_LONG, 0, t, 0, 3); // one copy, as collect's
                        result.setTimes(t[0], t[1], t[2]);
                    }
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

    /**
     * The per-request results, copied out in bulk: this runs once a batch on the completion
     * thread, usually before the JIT has compiled it, and in the interpreter each VarHandle
     * access costs microseconds (two a request: 120-200 us for a load's 15 requests on the
     * build machine, 70-110 us copied in bulk; all of it inside the load's time). Requests are
     * copied a block at a time, so a batch of any size needs no more than a block's worth of heap.
     */
    private static BatchResult collect(Store st, int n, int w) {
        MemorySegment reqs = st.reqs();
        long[] results = new long[n];
        long[] words = new long[Math.min(n, COLLECT_BLOCK) * REQ_WORDS];
        for (int base = 0; base < n; base += COLLECT_BLOCK) {
            int m = Math.min(COLLECT_BLOCK, n - base);
            MemorySegment.copy(reqs, JAVA_LONG, base * REQ_SIZE, words, 0, m * REQ_WORDS);
            for (int j = 0; j < m; j++) {
                results[base + j] = words[j * REQ_WORDS + RESULT_WORD];
            }
        }
        boolean mixed = w != 0 && w != n;
        boolean[] isWrite = null;
        if (mixed) {
            byte[] ops = new byte[n];
            MemorySegment.copy(st.ops(), JAVA_BYTE, 0, ops, 0, n);
            isWrite = new boolean[n];
            for (int i = 0; i < n; i++) {
                isWrite[i] = ops[i] == OP_WRITE;
            }
        }
        String[] failures = null;
        for (int i = 0; i < n; i++) {
            if (results[i] < 0) {
                if (failures == null) {
                    failures = new String[n];
                }
                boolean write = mixed ? isWrite[i] : w == n;
                long at = i * REQ_SIZE;
                failures[i] = st.files()[i].describe(write ? "write" : "read", st.buffers()[i],
                        (long) BUF_OFFSET.get(reqs, at), (long) NBYTES.get(reqs, at), (long) F_OFFSET.get(reqs, at));
            }
        }
        return new BatchResult(n > 0 && w == n, results, failures, isWrite);
    }

    private static void acquireAll(Store st, int n) {
        PhxFile[] files = st.files();
        RegisteredBuffer[] buffers = st.buffers();
        int i = 0;
        try {
            for (; i < n; i++) {
                files[i].acquire(buffers[i]);
            }
        } catch (RuntimeException e) {
            releaseAll(st, i);
            throw e;
        }
    }

    private static void releaseAll(Store st, int n) {
        PhxFile[] files = st.files();
        RegisteredBuffer[] buffers = st.buffers();
        for (int i = 0; i < n; i++) {
            files[i].release(buffers[i]);
        }
    }

    /** Caller holds this. */
    private void finish(int n) {
        releaseAll(store, n);
        inFlight = false;
        if (closeWhenIdle) {
            closeWhenIdle = false;
            free();
        }
    }

    private void free() {
        Arrays.fill(store.files(), 0, count, null);
        Arrays.fill(store.buffers(), 0, count, null);
        store.block().close();
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
     *
     * @return the bytes moved so far
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
        return "IoBatch[" + count + "/" + store.capacity() + (count == 0 ? "" : writes == 0 ? " reads"
                : writes == count ? " writes" : " reads and writes") + (inFlight ? ", in flight" : "")
                + (closed ? ", closed" : "") + "]";
    }
}
