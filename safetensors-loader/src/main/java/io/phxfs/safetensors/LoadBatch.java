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
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The reads of one load as one batch over the files it opened: {@link #start} submits it,
 * {@link #finish} waits, checks every result and zeroes short tails,
 * {@link #abandon} only waits; {@link #close} closes the batch and the files.
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
    /** When the batch was submitted ({@link System#nanoTime()}): the rate that tells when it should end. */
    private long submittedNanos;
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
            submittedNanos = System.nanoTime();
            running = batch.submitAsync();
            zeroTailsAhead();
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
        java.util.function.LongConsumer moved = progress == null ? null
                : done -> progress.onProgress(Math.min(inPlace + done, total), total);
        return BatchWait.await(f, batch::bytesDone, total - inPlace, submittedNanos, moved,
                TimeUnit.MILLISECONDS.toNanos(WeightLoader.PROGRESS_PERIOD_MS));
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

    /**
     * Closes every file, also after one fails to close; failures are added to {@code e}, or
     * without one the first is thrown with the others suppressed.
     */
    private void closeFiles(Throwable e) {
        RuntimeException first = null;
        for (PhxFile f : files.values()) {
            try {
                f.close();
            } catch (RuntimeException failure) {
                if (e != null) {
                    e.addSuppressed(failure);
                } else if (first == null) {
                    first = failure;
                } else {
                    first.addSuppressed(failure);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * Waits for the batch if it still runs (a caller that left {@link #finish} by an exception),
     * then closes it and the files, on the caller's thread: the reads use the descriptors until
     * they end, and a descriptor closed under them could be reused by another open. Session 16
     * closed the files on a virtual thread as the batch completed; on the H200 the load then
     * waited 0.3-0.4 ms for that thread to be scheduled, where the four close(2) calls
     * themselves take tens of microseconds (perf-3 session 17, docs/benchmarks.md).
     */
    @Override
    public void close() {
        if (running != null) {
            running.handle((r, x) -> null).join();
        }
        try {
            if (batch != null) {
                batch.close();
            }
        } finally {
            closeFiles(null);
        }
    }
}
