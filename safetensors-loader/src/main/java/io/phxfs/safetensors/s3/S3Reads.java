package io.phxfs.safetensors.s3;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.ProgressListener;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ranges of S3 objects read into registered buffers, the way Run:ai's Model Streamer reads a
 * checkpoint: the plan's reads cut into ranged GETs of {@link S3Settings#rangeBytes()}, at most
 * {@link S3Settings#concurrency()} in flight, each body landing in its destination as it
 * arrives. Host memory (and the host connector's device memory) is written in place; device
 * memory through one pinned host slot per worker and {@code Device.copyToDevice}, so that
 * at most concurrency x range size bytes are staged. No object is ever held whole.
 *
 * <p>WeightLoader hands its reads here when the model's files are S3 paths; the raw throughput
 * row of {@code phoenix load-bench s3://...} calls it directly.
 */
public final class S3Reads {
    /** Progress is reported at most once per this many bytes (and at the end). */
    private static final long REPORT_EVERY = 4L << 20;

    private S3Reads() {
    }

    /**
     * {@code length} bytes of {@code object} from {@code objectOffset} into {@code buffer} at
     * {@code bufferOffset}, of which the first {@code neededLength} must exist (the rest may lie
     * past the end of the object, as an aligned read of a file's last tensor does);
     * {@code zeroTail}: bytes past the end are zeroed (the buffer is uninitialized).
     *
     * @param object an S3 path
     * @param buffer the destination
     * @param bufferOffset where in the buffer the first byte goes
     * @param objectOffset the first byte of the object read
     * @param length bytes to place
     * @param neededLength bytes that must come from the object
     * @param zeroTail whether bytes past the object's end are zeroed
     */
    public record Range(Path object, RegisteredBuffer buffer, long bufferOffset, long objectOffset, long length,
                        long neededLength, boolean zeroTail) {
        /**
         * Checks the range.
         *
         * @throws IllegalArgumentException for a path that is no S3 path, or offsets out of order
         */
        public Range {
            Objects.requireNonNull(buffer, "buffer");
            if (!(object instanceof S3Path)) {
                throw new IllegalArgumentException("not an S3 path: " + object);
            }
            if (bufferOffset < 0 || objectOffset < 0 || length < 0 || neededLength < 0 || neededLength > length) {
                throw new IllegalArgumentException("bad range of " + object + ": buffer offset " + bufferOffset
                        + ", object offset " + objectOffset + ", length " + length + ", needed " + neededLength);
            }
        }
    }

    /**
     * Whether any of {@code files} is an S3 object: the loader then reads them all here.
     *
     * @param files the files of a load
     * @return true when one of them is an S3 path
     */
    public static boolean any(Collection<Path> files) {
        for (Path p : files) {
            if (p instanceof S3Path) {
                return true;
            }
        }
        return false;
    }

    /**
     * Fetches the first bytes (the header) of each object at once, up to the concurrency in
     * flight, so that the headers' parse finds them in memory. Failures are left to the parse.
     *
     * @param files paths of a load; those of other file systems are ignored
     */
    public static void prefetchHeaders(Collection<Path> files) {
        Map<S3FileSystem, List<S3Path>> byFs = new LinkedHashMap<>();
        for (Path p : files) {
            if (p instanceof S3Path s) {
                byFs.computeIfAbsent(s.getFileSystem(), k -> new ArrayList<>()).add(s);
            }
        }
        byFs.forEach(S3FileSystem::prefetch);
    }

    /** One ranged GET: at most rangeBytes, into one destination. */
    private record Piece(S3Path object, S3Client.ObjectInfo info, RegisteredBuffer buffer, long bufferOffset,
                         long objectOffset, long length) {
    }

    /**
     * Reads every range, then returns; on any failure, waits for the GETs in flight to stop
     * (none writes into a buffer after this returns or throws) and throws the first failure.
     * Retryable failures (resets, short bodies, 5xx, SlowDown) are retried per GET with backoff,
     * at most {@link S3Settings#maxAttempts()} tries.
     *
     * @param ranges the ranges, of S3 paths of one or more file systems
     * @param progress told of the bytes placed, or null
     * @throws UncheckedIOException wrapping the {@link S3Exception} (or other IOException) of the
     *                              first range that failed, its message naming the URL
     */
    public static void read(List<Range> ranges, ProgressListener progress) {
        if (ranges.isEmpty()) {
            if (progress != null) {
                progress.onProgress(0, 0);
            }
            return;
        }
        S3Settings settings = ((S3Path) ranges.get(0).object()).getFileSystem().settings();
        long total = 0;
        List<Piece> pieces = new ArrayList<>();
        List<Range> tails = new ArrayList<>();
        try {
            for (Range r : ranges) {
                total += r.length();
                S3Path p = (S3Path) r.object();
                S3Client.ObjectInfo info = p.getFileSystem().info(p);
                long available = Math.max(0, Math.min(r.length(), info.size() - r.objectOffset()));
                if (available < r.neededLength()) {
                    throw S3Client.fatal(p.toString(), "GET", 0, null, "the object is " + info.size()
                            + " bytes, but bytes up to " + (r.objectOffset() + r.neededLength())
                            + " were planned from its header (did it change while loading?)", null);
                }
                long step = p.getFileSystem().settings().rangeBytes();
                for (long off = 0; off < available; off += step) {
                    pieces.add(new Piece(p, info, r.buffer(), r.bufferOffset() + off, r.objectOffset() + off,
                            Math.min(step, available - off)));
                }
                if (available < r.length() && r.zeroTail()) {
                    tails.add(new Range(p, r.buffer(), r.bufferOffset() + available, r.objectOffset() + available,
                            r.length() - available, 0, true));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
        new Run(settings, pieces, total, progress).execute();
        zeroTails(tails);
        if (progress != null) {
            progress.onProgress(total, total);
        }
    }

    /** What an aligned read leaves past the end of an object, zeroed in an uninitialized buffer. */
    private static void zeroTails(List<Range> tails) {
        for (Range t : tails) {
            MemorySegment seg = t.buffer().segment().orElse(null);
            if (seg != null) {
                seg.asSlice(t.bufferOffset(), t.length()).fill((byte) 0);
                continue;
            }
            try (Arena arena = Arena.ofConfined()) {
                Phoenix.open().device(t.buffer().deviceId()).copyToDevice(arena.allocate(t.length()), t.buffer(),
                        t.bufferOffset());
            }
        }
    }

    /** One read's workers, its first failure and its progress. */
    private static final class Run {
        private final S3Settings settings;
        private final ConcurrentLinkedQueue<Piece> queue;
        private final int workers;
        private final long total;
        private final ProgressListener progress;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();
        private long done;
        private long reported;

        Run(S3Settings settings, List<Piece> pieces, long total, ProgressListener progress) {
            this.settings = settings;
            this.queue = new ConcurrentLinkedQueue<>(pieces);
            this.workers = Math.min(settings.concurrency(), pieces.size());
            this.total = total;
            this.progress = progress;
        }

        boolean abandoned() {
            return failure.get() != null;
        }

        void fail(Throwable t) {
            if (!failure.compareAndSet(null, t) && failure.get() != t) {
                Throwable first = failure.get();
                // the first failure says what went wrong; "abandoned" echoes of it add nothing
                if (!(t instanceof InterruptedIOException)) {
                    first.addSuppressed(t);
                }
            }
        }

        synchronized void moved(long n) {
            done += n;
            if (progress != null && (done - reported >= REPORT_EVERY)) {
                reported = done;
                progress.onProgress(Math.min(done, total), total);
            }
        }

        void execute() {
            if (progress != null) {
                progress.onProgress(0, total);
            }
            List<Thread> threads = new ArrayList<>(workers);
            for (int i = 0; i < workers; i++) {
                threads.add(Thread.ofVirtual().name("phoenix-s3-read-" + i).start(this::work));
            }
            boolean interrupted = false;
            for (Thread t : threads) {
                while (true) {
                    try {
                        t.join();
                        break;
                    } catch (InterruptedException e) {
                        // the workers write into the caller's buffers: they must stop before we return
                        interrupted = true;
                        fail(new InterruptedIOException("interrupted"));
                    }
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            Throwable f = failure.get();
            if (f instanceof IOException e) {
                throw new UncheckedIOException(e.getMessage(), e);
            }
            if (f instanceof RuntimeException e) {
                throw e;
            }
            if (f instanceof Error e) {
                throw e;
            }
            if (f != null) {
                throw new IllegalStateException(f);
            }
        }

        private void work() {
            RegisteredBuffer staging = null;
            try {
                Piece p;
                while (!abandoned() && (p = queue.poll()) != null) {
                    MemorySegment direct = p.buffer().segment().orElse(null);
                    if (direct != null) {
                        read(p, direct.asSlice(p.bufferOffset(), p.length()));
                        continue;
                    }
                    if (staging == null) {
                        // pinned: the copy to the device then needs no bounce of its own
                        staging = Phoenix.open().host().allocatePinned(settings.rangeBytes());
                    }
                    MemorySegment slot = staging.segment().orElseThrow().asSlice(0, p.length());
                    read(p, slot);
                    if (!abandoned()) {
                        Phoenix.open().device(p.buffer().deviceId()).copyToDevice(slot, p.buffer(), p.bufferOffset());
                    }
                }
            } catch (Throwable t) {
                fail(t);
            } finally {
                if (staging != null) {
                    try {
                        staging.close();
                    } catch (RuntimeException e) {
                        fail(e);
                    }
                }
            }
        }

        private void read(Piece p, MemorySegment into) throws IOException {
            try {
                p.object().getFileSystem().client().read(p.object().bucket(), p.object().key(), p.info(),
                        p.objectOffset(), into, this::moved, this::abandoned);
            } catch (S3Exception e) {
                if (e.status() == 412 || e.getMessage().contains("changed while loading")) {
                    p.object().getFileSystem().forget(p.object());
                }
                throw e;
            }
        }
    }
}
