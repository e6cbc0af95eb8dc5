package io.phxfs.safetensors;

import io.phxfs.core.BatchResult;
import io.phxfs.core.Errno;
import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The reads of one load as one batch over the files it opened: {@link #start} submits it,
 * {@link #finish} waits, checks every result and zeroes short tails,
 * {@link #abandon} only waits. The files are closed as the batch completes; closing waits for
 * that and closes the batch.
 */
final class LoadBatch implements AutoCloseable {
    /**
     * One read: {@code length} bytes of {@code file} at {@code fileOffset} into {@code buffer}
     * at {@code bufferOffset}, of which {@code neededLength} must arrive; {@code zeroTail}: the
     * buffer is uninitialized, and bytes past the end of the file must be zeroed.
     */
    record Read(Path file, RegisteredBuffer buffer, long bufferOffset, long fileOffset,
                        long length, long neededLength, boolean zeroTail) {
    }

    private final List<Read> reads;
    private final Map<Path, PhxFile> files = new HashMap<>();
    private final IoBatch batch;
    private final long inPlace;
    private final long total;
    private final ProgressListener progress;
    private CompletableFuture<BatchResult> running;
    private boolean started;
    /**
     * Per request, computed before the reads end so that what runs after them is one loop over
     * two arrays (code that runs once a load, with caches the transfer has just flushed: the
     * record-by-record checks took 60-140 us on the H200): {@code needed[i]}, the bytes it must
     * deliver; {@code zeroBelow[i]}, a result below which the rest of its destination is zeroed
     * (0 where nothing needs zeroing, the request's length where {@link #zeroTailsAhead} did not
     * zero it, the file's end where it did).
     */
    private long[] needed;
    private long[] zeroBelow;
    /** Completes once the files were closed as the batch completed; null before {@link #start}. */
    private CompletableFuture<?> filesClosed;
    /** A failure of closing the files as the batch completed, rethrown by {@link #close}; guarded by this. */
    private RuntimeException closeFailure;
    /** libphoenix's queued / first task / last task ended (System.nanoTime's clock), once finished; null before or unknown. */
    private long[] times;

    /**
     * {@code opener}: how a file is opened (the loader's O_DIRECT rule); {@code buffered}: files
     * to open through the page cache whatever {@code opener} does; {@code inPlace}: bytes
     * already in place (mapped); {@code progress}: told of the moved bytes, or null.
     */
    LoadBatch(List<Read> reads, Function<Path, PhxFile> opener, Predicate<Path> buffered, long inPlace,
              ProgressListener progress) {
        this(reads, open(filesOf(reads), opener, buffered), inPlace, progress);
    }

    private static List<Path> filesOf(List<Read> reads) {
        List<Path> paths = new java.util.ArrayList<>(reads.size());
        for (Read r : reads) {
            paths.add(r.file());
        }
        return paths;
    }

    /**
     * Over files already opened (every file of {@code reads}, each once); the batch owns them
     * from here on, and closes them also when this constructor fails.
     */
    LoadBatch(List<Read> reads, Map<Path, PhxFile> opened, long inPlace, ProgressListener progress) {
        this.reads = reads;
        this.progress = progress;
        this.inPlace = inPlace;
        this.files.putAll(opened);
        long sum = inPlace;
        for (Read r : reads) {
            sum += r.length();
        }
        this.total = sum;
        IoBatch b = null;
        try {
            if (!reads.isEmpty()) {
                b = IoBatch.create(reads.size());
                for (Read r : reads) {
                    b.add(IoRequest.read(files.get(r.file()), r.fileOffset(), r.buffer(), r.bufferOffset(), r.length()));
                }
            }
        } catch (RuntimeException | Error e) {
            if (b != null) {
                b.close();
            }
            closeFiles(e);
            throw e;
        }
        this.batch = b;
    }

    /**
     * Opens each of {@code paths} once, as {@code opener} says ({@code buffered} ones through
     * the page cache whatever it says); on a failure closes what it opened and rethrows. One
     * file after another: opened on virtual threads, 4 files took 1.08-1.12 ms of a fresh JVM's
     * time on the H200 (perf-3 session 16), where one after another took 0.6-0.7 ms in session
     * 15's probe (docs/benchmarks.md).
     */
    static Map<Path, PhxFile> open(List<Path> paths, Function<Path, PhxFile> opener, Predicate<Path> buffered) {
        Map<Path, PhxFile> files = new HashMap<>();
        try {
            for (Path p : paths) {
                if (!files.containsKey(p)) {
                    files.put(p, buffered.test(p) ? PhxFile.open(p, OpenMode.READ) : opener.apply(p));
                }
            }
        } catch (RuntimeException | Error e) {
            for (PhxFile f : files.values()) {
                try {
                    f.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
        return files;
    }

    /** Submits the reads now, so that the caller can do other work until {@link #finish}. */
    void start() {
        started = true;
        if (progress != null) {
            progress.onProgress(inPlace, total);
        }
        if (batch != null) {
            running = batch.submitAsync();
            // before the files may close: it asks each for its size
            zeroTailsAhead();
            // The files are closed as the batch completes, on a virtual thread of their own, while
            // this thread wakes up: closing them after the load took 0.1-0.2 ms of its time.
            // Nothing after the reads needs them (the results name the failures already). Not on
            // libphoenix's completion thread, which every batch of the process shares: close(2)
            // can wait on a FUSE daemon.
            filesClosed = running.whenCompleteAsync((r, x) -> closeFilesAtCompletion(),
                    task -> Thread.ofVirtual().name("phoenix-close-files").start(task));
        }
    }

    private void closeFilesAtCompletion() {
        try {
            closeFiles(null);
        } catch (RuntimeException e) {
            synchronized (this) {
                closeFailure = e;
            }
        }
    }

    /**
     * Zeroes, while the reads run, the part of each request's destination past its file's end
     * (alignment padding), where the file is read through the page cache: such a read writes
     * exactly the bytes it returns, and none lie past the end. Done after the transfer, these
     * small copies to a device were a few hundred microseconds at the end of every load. A read
     * of an O_DIRECT file moves whole blocks, so its tail is zeroed after it, from what it
     * returned.
     */
    private void zeroTailsAhead() {
        int n = reads.size();
        needed = new long[n];
        zeroBelow = new long[n];
        for (int i = 0; i < n; i++) {
            Read r = reads.get(i);
            needed[i] = r.neededLength();
            zeroBelow[i] = r.zeroTail() ? r.length() : 0;
        }
        Map<Path, Long> sizes = new HashMap<>();
        for (int i = 0; i < n; i++) {
            Read r = reads.get(i);
            if (!r.zeroTail() || r.neededLength() >= r.length()) {
                continue;
            }
            PhxFile f = files.get(r.file());
            if (f.isDirect()) {
                continue;
            }
            try {
                long from = Math.max(r.neededLength(), sizes.computeIfAbsent(r.file(), k -> f.size()) - r.fileOffset());
                if (from >= r.length()) {
                    continue;
                }
                zero(r, from);
                // the read writes exactly what it returns: a result from the file's end on needs no zeroing
                zeroBelow[i] = from;
            } catch (RuntimeException e) {
                // the reads are in flight and hold the buffers: this must not throw; what is not
                // zeroed now is zeroed after the reads, as for O_DIRECT, and a lasting problem
                // (the device) is reported there
                return;
            }
        }
    }

    void finish() {
        if (!started) {
            start();
        }
        if (batch == null) {
            return;
        }
        BatchResult result = await(running);
        if (result.finishedNanos() != 0) {
            times = new long[] {result.queuedNanos(), result.startedNanos(), result.finishedNanos()};
        }
        checkAndZeroTails(result);
        if (progress != null) {
            progress.onProgress(total, total);
        }
    }

    /**
     * Cancels the reads no worker has taken yet, then waits for the rest to end, whatever
     * they did: nobody uses what they bring. Early reads are abandoned when the header turns
     * out malformed; reading on would delay the error by the whole file (minutes, for a
     * checkpoint of 100 GB).
     */
    void abandon() {
        if (running != null) {
            try {
                batch.cancel();
            } catch (RuntimeException e) {
                // then the reads run to their end: slower, and no less correct
            }
            running.handle((r, x) -> null).join();
        }
    }

    /** Waits for the batch; with a listener, reports its moved bytes until it completes. */
    private BatchResult await(CompletableFuture<BatchResult> f) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return progress == null ? f.get() : f.get(WeightLoader.PROGRESS_PERIOD_MS, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    try {
                        progress.onProgress(Math.min(inPlace + batch.bytesDone(), total), total);
                    } catch (RuntimeException listenerFailure) {
                        f.handle((r, x) -> null).join(); // the buffers stay in use until the batch ends
                        throw listenerFailure;
                    }
                } catch (InterruptedException e) {
                    interrupted = true; // the batch writes into our buffers: it must finish first
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException re ? re : new CompletionException(e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * When the finished batch was queued, when its first task began and when its last ended,
     * on {@link System#nanoTime()}'s clock; null when it has not finished, moved nothing
     * through libphoenix, or its times are unknown.
     */
    long[] times() {
        return times;
    }

    /**
     * Every request must have delivered the bytes its tensors need (more, alignment past the
     * end of the file, is optional); what a read left unwritten in an uninitialized buffer
     * (alignment past the end of the file) is zeroed. A file that shrank returned less than was
     * zeroed ahead, and that gap is zeroed now (one that grew during the load may leave file
     * bytes in the padding, past every tensor).
     */
    private void checkAndZeroTails(BatchResult result) {
        result.throwIfFailed();
        long[] need = needed;
        long[] below = zeroBelow;
        for (int i = 0; i < need.length; i++) {
            long got = result.result(i);
            if (got < need[i]) {
                Read r = reads.get(i);
                throw new PhoenixException("read " + r.file() + " at offset " + r.fileOffset() + ": got "
                        + got + " of " + r.neededLength() + " bytes (did the file shrink while loading?)", Errno.EIO);
            }
            if (got < below[i]) {
                zero(reads.get(i), Math.max(0, got));
            }
        }
    }

    /** Zeroes {@code [from, length)} of a request's destination. */
    private static void zero(Read r, long from) {
        if (r.buffer().isHost()) {
            r.buffer().segment().orElseThrow().asSlice(r.bufferOffset() + from, r.length() - from).fill((byte) 0);
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            Phoenix.open().device(r.buffer().deviceId())
                    .copyToDevice(arena.allocate(r.length() - from), r.buffer(), r.bufferOffset() + from);
        }
    }

    private void closeFiles(Throwable e) {
        for (PhxFile f : files.values()) {
            try {
                f.close();
            } catch (RuntimeException suppressed) {
                if (e != null) {
                    e.addSuppressed(suppressed);
                } else {
                    throw suppressed;
                }
            }
        }
    }

    @Override
    public void close() {
        try {
            if (batch != null) {
                batch.close();
            }
        } finally {
            if (filesClosed != null) {
                // also when closed by the other thread: closed once close returns, not a moment after
                // (the batch has completed by now: finish and abandon wait for it)
                filesClosed.handle((r, x) -> null).join();
            }
            RuntimeException e;
            synchronized (this) {
                e = closeFailure;
                closeFailure = null;
            }
            try {
                closeFiles(null);
            } catch (RuntimeException again) {
                if (e != null) {
                    again.addSuppressed(e);
                }
                throw again;
            }
            if (e != null) {
                throw e;
            }
        }
    }
}
