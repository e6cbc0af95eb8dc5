package io.phxfs.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.sun.nio.file.ExtendedOpenOption;
import io.phxfs.core.BatchResult;
import io.phxfs.core.Device;
import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix bench}: read throughput of Phoenix against plain reads of the same file in
 * the same run. Three whole-file figures (the CPU-copy ceiling of N threads that only pread
 * into host memory, Phoenix into the target, one thread of pread plus copy) and a sweep of
 * I/O sizes and queue depths.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Measures read throughput into device or host memory, Phoenix beside plain pread loops on the same file.",
                "Target: device 0 unless --device N or --host; host memory where there is no accelerator.",
                "A generated file is kept in --dir for later runs (the last line says where); --clean deletes them."})
final class BenchCommand implements Callable<Integer> {
    private static final long WHOLE_FILE_REQUEST = 64L << 20;
    private static final int CEILING_CHUNK = 8 << 20;
    private static final long WARM_UP_NANOS = 100_000_000L;
    /** Below this a whole-file read takes too little time for its rate to mean anything. */
    static final long MIN_RELIABLE_BYTES = 64L << 20;

    @Option(names = "--file", description = "File to read (default: a generated file of --size bytes in --dir).")
    Path file;

    @Option(names = "--size", defaultValue = "1g", converter = Sizes.Converter.class,
            description = "Size of the generated file, e.g. 64m, 1g, 4GiB (default: ${DEFAULT-VALUE}).")
    long size;

    @Option(names = "--dir", description = {"An existing directory for the generated file (default: java.io.tmpdir).",
            "The file (phoenix-bench-<bytes>.bin) is kept there for later runs; --clean removes it."})
    Path dir;

    @Option(names = "--clean", description = "Delete the cached phoenix-bench-*.bin files in --dir, print what went, and exit.")
    boolean clean;

    @ArgGroup(exclusive = true)
    TargetOptions target = new TargetOptions();

    @Option(names = "--sizes", split = ",", defaultValue = "4k,64k,1m,8m,64m", converter = Sizes.Converter.class,
            description = "I/O sizes of the sweep (default: ${DEFAULT-VALUE}).")
    List<Long> ioSizes;

    @Option(names = "--depths", split = ",", defaultValue = "1,8,32",
            description = "Queue depths of the sweep (default: ${DEFAULT-VALUE}).")
    List<Integer> depths;

    @Option(names = "--sweep-bytes", defaultValue = "256m", converter = Sizes.Converter.class,
            description = "Bytes read per sweep point, at most the file (default: ${DEFAULT-VALUE}).")
    long sweepBytes;

    @Option(names = "--repeat", defaultValue = "3", description = "Whole-file runs of each reader; the median is reported (default: ${DEFAULT-VALUE}).")
    int repeat;

    @Option(names = "--threads", description = "Threads of the CPU-copy ceiling reader (default: Phoenix's worker count).")
    Integer threads;

    @Option(names = "--direct", description = "Open with O_DIRECT (cold reads from the disk) instead of through the page cache.")
    boolean direct;

    @Option(names = "--no-sweep", description = "Only the whole-file comparison.")
    boolean noSweep;

    @Option(names = "--json", description = "Print one JSON object on stdout instead of tables.")
    boolean json;

    @Option(names = "--quiet", description = "No progress lines on stderr.")
    boolean quiet;

    @Spec
    CommandSpec spec;

    /**
     * One sweep point: Phoenix with {@code depth} reads of {@code ioSize} per batch, against
     * {@code depth} threads each with one pread (+ copy) of {@code ioSize} in flight (the same
     * concurrency), and for reference the single-thread loop.
     */
    record Point(long ioSize, int depth, double phoenixGbps, double iops, double baselineGbps, double singleThreadGbps,
                 double spread) {
        /** Two measurements of one side disagreeing by more than this: the point says little. */
        static final double NOISY = 0.2;

        boolean noisy() {
            return spread > NOISY;
        }

        double ratio() {
            return phoenixGbps / baselineGbps;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (threads != null && (threads < 1 || threads > 1024)) {
            throw new IllegalArgumentException("--threads " + threads + ": not in 1..1024");
        }
        if (repeat < 1) throw new IllegalArgumentException("--repeat must be >= 1, was " + repeat);
        for (int d : depths) if (d < 1 || d > 4096) throw new IllegalArgumentException("--depths: " + d + " is not in 1..4096");
        long[] sizes = ioSizes.stream().mapToLong(Long::longValue).toArray();
        long sweepLimit = sweepBytes;
        PrintWriter err = spec.commandLine().getErr();
        Progress progress = new Progress(err, quiet);
        Path cacheDir = dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"));
        if (!Files.isDirectory(cacheDir)) {
            // created on demand, a typo in --dir would leave a directory of 1 GiB files behind
            throw new IllegalArgumentException("--dir " + cacheDir + ": " + (Files.exists(cacheDir) ? "not a directory"
                    : "no such directory (create it first)"));
        }
        if (clean) {
            return clean(cacheDir);
        }
        Phoenix phx = Phoenix.open();

        // the target first: a wrong --device should not cost a generated file
        Device device = target.resolve(phx, false);
        Path path = file;
        if (path != null && !Files.isRegularFile(path)) {
            if (!Files.exists(path)) {
                // the OS's words, as every other command says them for a missing file
                throw new IllegalArgumentException("--file " + path + ": ENOENT (No such file or directory)");
            }
            throw new IllegalArgumentException("--file " + path + ": not a regular file");
        }
        target.announce(err, quiet);
        if (path == null) {
            path = BenchFile.ensure(cacheDir, size, progress);
        }
        long fileSize = Files.size(path);
        if (fileSize == 0) throw new IllegalArgumentException("--file " + path + ": the file is empty");
        boolean reliable = fileSize >= MIN_RELIABLE_BYTES;
        if (!reliable) {
            // a file of a few KiB is read in microseconds: thread start-up and batch set-up
            // dominate, and the ratios say nothing about throughput
            err.printf("phoenix: bench: warning: %s is too small to measure throughput (under %s); rates and ratios are unreliable%n",
                    Sizes.format(fileSize), Sizes.format(MIN_RELIABLE_BYTES));
            err.flush();
        }


        int ceilingThreads = threads != null ? threads : (device != null ? device.workers() : Integer.parseInt(phx.getConfig("workers")));
        String targetName = device == null ? "host memory"
                : "device " + device.id() + " (" + device.name() + "; mode " + device.mode().name().toLowerCase()
                + ", connector " + device.connector() + ", engine " + device.engine().name().toLowerCase() + ")";
        progress.step("target: %s", targetName);

        if (!direct) {
            progress.step("warming the page cache with %s", path);
            ceiling(path, fileSize, ceilingThreads);
        }

        // rounded up to 4 KiB so an O_DIRECT read of the file's last, partial block fits
        long bufBytes = (fileSize + 4095) & ~4095L;
        try (RegisteredBuffer buf = device == null ? phx.host().allocate(bufBytes) : device.allocate(bufBytes);
             PhxFile pf = PhxFile.open(path, direct ? new OpenMode[] {OpenMode.READ, OpenMode.DIRECT} : new OpenMode[] {OpenMode.READ});
             Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(CEILING_CHUNK, 4096);
            // untimed: workers create their streams and register their pinned slots on first
            // use, once per process, and reuse them for every later call
            progress.step("phoenix warm-up (worker slots are set up on first use)");
            phoenixWholeFile(pf, buf, fileSize);
            double[] ceil = new double[repeat], ours = new double[repeat], base = new double[repeat];
            for (int r = 0; r < repeat; r++) {
                progress.step("whole file, run %d/%d: ceiling (%d threads pread into host memory)", r + 1, repeat, ceilingThreads);
                ceil[r] = ceiling(path, fileSize, ceilingThreads);
                progress.step("whole file, run %d/%d: phoenix", r + 1, repeat);
                ours[r] = phoenixWholeFile(pf, buf, fileSize);
                progress.step("whole file, run %d/%d: single-thread pread%s", r + 1, repeat, needsCopy(device) ? " + copy" : "");
                base[r] = baseline(path, device, buf, staging, fileSize, CEILING_CHUNK);
            }
            progress.step("verifying what phoenix reads against %s", file == null ? "the generator" : "a plain read of the file");
            String mismatch = verify(pf, path, file == null, device, buf, fileSize, staging);

            List<Point> sweep = new ArrayList<>();
            // rates of reads that deliver wrong bytes mean nothing: report the failure without them
            if (!noSweep && mismatch == null) {
                int total = sizes.length * depths.size(), k = 0;
                for (long bs : sizes) {
                    long bytes = Math.max(bs, Math.min(sweepLimit, fileSize) / bs * bs);
                    if (bs > fileSize) {
                        progress.step("sweep: skipping %s, larger than the file", Sizes.format(bs));
                        k += depths.size();
                        continue;
                    }
                    // untimed first, for 0.1 s: a point of 4 KiB reads is a few ten thousand calls,
                    // too few for the JIT to have compiled the loop before the clock starts
                    long warm = Math.min(bytes, Math.max(bs, 2048 * bs));
                    double single = Double.NaN;
                    for (int qd : depths) {
                        progress.step("sweep [%d/%d] %s at queue depth %d: %d thread%s of pread%s, then phoenix", ++k, total,
                                Sizes.format(bs), qd, qd, qd == 1 ? "" : "s", needsCopy(device) ? " + copy" : "");
                        for (long until = System.nanoTime() + WARM_UP_NANOS; System.nanoTime() < until; ) {
                            baselineThreads(path, device, buf, staging, warm, bs, qd);
                        }
                        double b1 = baselineThreads(path, device, buf, staging, bytes, bs, qd);
                        if (Double.isNaN(single)) {
                            single = qd == 1 ? b1 : baseline(path, device, buf, staging, bytes, bs);
                        }
                        for (long until = System.nanoTime() + WARM_UP_NANOS; System.nanoTime() < until; ) {
                            phoenixSweep(pf, buf, bs, qd, warm);
                        }
                        // each side twice, in the order B P P B: a drift of the machine during the
                        // point shows as a disagreement, and the point is flagged instead of trusted
                        double p1 = bytes / phoenixSweep(pf, buf, bs, qd, bytes) / 1e9;
                        double p2 = bytes / phoenixSweep(pf, buf, bs, qd, bytes) / 1e9;
                        double b2 = baselineThreads(path, device, buf, staging, bytes, bs, qd);
                        double pg = (p1 + p2) / 2;
                        double bg = (b1 + b2) / 2;
                        double spread = Math.max(Math.abs(p1 - p2) / pg, Math.abs(b1 - b2) / bg);
                        sweep.add(new Point(bs, qd, pg, pg * 1e9 / bs, bg, single, spread));
                    }
                }
            }
            report(spec.commandLine().getOut(), path, fileSize, targetName, ceilingThreads, median(ceil), median(ours),
                    median(base), ceil, ours, base, sweep, device, mismatch, reliable, file == null ? path : null);
            if (mismatch != null) {
                spec.commandLine().getErr().println("phoenix: bench: " + mismatch);
                spec.commandLine().getErr().flush();
                return 1;
            }
        }
        return 0;
    }

    /** Deletes the cached bench files in {@code d}, naming each; they are regenerated on demand. */
    private int clean(Path d) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        long bytes = 0;
        List<Path> files = BenchFile.all(d);
        for (Path f : files) {
            long n = Files.size(f);
            Files.deleteIfExists(f);
            bytes += n;
            out.printf("removed %s (%s)%n", f, Sizes.format(n));
        }
        out.printf("%d cached bench file%s removed from %s, %s freed%n", files.size(), files.size() == 1 ? "" : "s", d,
                LoadCommand.human(bytes));
        out.flush();
        return 0;
    }

    private static boolean needsCopy(Device device) {
        return device != null && !device.isHostMemory();
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private FileChannel channel(Path p) throws IOException {
        OpenOption[] opts = direct ? new OpenOption[] {StandardOpenOption.READ, ExtendedOpenOption.DIRECT}
                : new OpenOption[] {StandardOpenOption.READ};
        return FileChannel.open(p, opts);
    }

    /** N threads pread 8 MiB chunks into private host buffers: what the CPUs can copy. GB/s. */
    private double ceiling(Path p, long fileSize, int n) throws Exception {
        AtomicLong next = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (FileChannel ch = channel(p)) {
            Thread[] ts = new Thread[n];
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                ts[i] = Thread.ofPlatform().start(() -> {
                    ByteBuffer bb = ByteBuffer.allocateDirect(CEILING_CHUNK + 4096).alignedSlice(4096);
                    try {
                        for (long off; (off = next.getAndAdd(CEILING_CHUNK)) < fileSize; ) {
                            bb.clear();
                            bb.limit((int) Math.min(CEILING_CHUNK, fileSize - off));
                            if (direct) bb.limit(Math.min(CEILING_CHUNK, (bb.limit() + 4095) & ~4095));
                            readFully(ch, bb, off);
                        }
                    } catch (IOException e) {
                        failure.compareAndSet(null, e);
                    }
                });
            }
            for (Thread t : ts) t.join();
            if (failure.get() != null) throw failure.get();
            return fileSize / ((System.nanoTime() - t0) / 1e9) / 1e9;
        }
    }

    /** One batch of 64 MiB requests covering the file. GB/s. */
    private static double phoenixWholeFile(PhxFile pf, RegisteredBuffer buf, long fileSize) {
        int n = (int) ((fileSize + WHOLE_FILE_REQUEST - 1) / WHOLE_FILE_REQUEST);
        try (IoBatch batch = IoBatch.create(n)) {
            for (int i = 0; i < n; i++) {
                long off = i * WHOLE_FILE_REQUEST;
                batch.add(IoRequest.read(pf, off, buf, off, Math.min(WHOLE_FILE_REQUEST, fileSize - off)));
            }
            long t0 = System.nanoTime();
            BatchResult r = batch.run().throwIfFailed();
            double secs = (System.nanoTime() - t0) / 1e9;
            if (r.totalBytes() != fileSize) throw new IllegalStateException("short read: " + r.totalBytes() + " of " + fileSize);
            return fileSize / secs / 1e9;
        }
    }

    /** Sequential reads of bs bytes, qd per batch, into the same offsets of buf. Seconds. */
    private static double phoenixSweep(PhxFile pf, RegisteredBuffer buf, long bs, int qd, long bytes) {
        try (IoBatch batch = IoBatch.create(qd)) {
            long t0 = System.nanoTime();
            for (long off = 0; off < bytes; ) {
                batch.clear();
                for (int i = 0; i < qd && off < bytes; i++, off += bs) batch.add(IoRequest.read(pf, off, buf, off, bs));
                batch.run().throwIfFailed();
            }
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    /**
     * The plain loop a user writes: one thread, pread of bs into the target (host) or into a
     * staging buffer and then {@link Device#copyToDevice} (device). That copy goes through
     * libphoenix's own copy stream, one copy at a time, not a cudaMemcpy of the user's. GB/s.
     */
    private double baseline(Path p, Device device, RegisteredBuffer buf, MemorySegment staging, long bytes, long bs)
            throws IOException {
        try (FileChannel ch = channel(p)) {
            long t0 = System.nanoTime();
            for (long off = 0; off < bytes; off += bs) {
                copyRange(ch, device, buf, staging, off, Math.min(bs, bytes - off));
            }
            return bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
        }
    }

    /**
     * The sweep's like-for-like baseline: {@code threads} threads, each with one read of bs
     * (and its copy) in flight, taking the next offset as they finish: as many reads in flight
     * as Phoenix's batch of {@code depth}. One thread is {@link #baseline}. GB/s.
     */
    private double baselineThreads(Path p, Device device, RegisteredBuffer buf, MemorySegment staging, long bytes, long bs,
                                   int threads) throws Exception {
        if (threads == 1) {
            return baseline(p, device, buf, staging, bytes, bs);
        }
        AtomicLong next = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        // threads start and allocate before the clock: on a small sweep, starting them would be
        // most of what is timed
        // the clock starts in the barrier's action, before any thread is released
        AtomicLong start = new AtomicLong();
        java.util.concurrent.CyclicBarrier ready = new java.util.concurrent.CyclicBarrier(threads + 1,
                () -> start.set(System.nanoTime()));
        try (FileChannel ch = channel(p)) {
            Thread[] ts = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                ts[i] = Thread.ofPlatform().start(() -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment own = needsCopy(device) ? arena.allocate(Math.min(bs, CEILING_CHUNK) + 4096, 4096) : null;
                        ready.await();
                        for (long off; (off = next.getAndAdd(bs)) < bytes; ) {
                            copyRange(ch, device, buf, own, off, Math.min(bs, bytes - off));
                        }
                    } catch (Exception e) {
                        failure.compareAndSet(null, e);
                        ready.reset(); // a thread that fails before the start must not leave the others waiting
                    }
                });
            }
            try {
                ready.await();
            } catch (java.util.concurrent.BrokenBarrierException e) {
                for (Thread t : ts) t.join();
                throw failure.get() != null ? failure.get() : e;
            }
            for (Thread t : ts) t.join();
            if (failure.get() != null) throw failure.get();
            return bytes / ((System.nanoTime() - start.get()) / 1e9) / 1e9;
        }
    }

    /** n bytes at off: pread straight into host memory, or pread into staging and copy to the device. */
    private void copyRange(FileChannel ch, Device device, RegisteredBuffer buf, MemorySegment staging, long off, long n)
            throws IOException {
        if (needsCopy(device)) {
            for (long done = 0; done < n; ) {
                long chunk = Math.min(n - done, staging.byteSize());
                ByteBuffer bb = staging.asSlice(0, direct ? Math.min((chunk + 4095) & ~4095L, staging.byteSize()) : chunk).asByteBuffer();
                readFully(ch, bb, off + done);
                device.copyToDevice(staging.asSlice(0, chunk), buf, off + done);
                done += chunk;
            }
        } else {
            long rn = direct ? (n + 4095) & ~4095L : n;
            readFully(ch, buf.segment().orElseThrow().asSlice(off, rn).asByteBuffer(), off);
        }
    }

    /** Reads until bb is full or the file ends; a short O_DIRECT read means the end. */
    private void readFully(FileChannel ch, ByteBuffer bb, long pos) throws IOException {
        while (bb.hasRemaining()) {
            int want = bb.remaining();
            int n = ch.read(bb, pos + bb.position());
            if (n < 0 || (direct && n < want)) return;
        }
    }

    /** Compares 64 spread 4 KiB blocks of the loaded memory with the file. */
    /**
     * Untimed: fills the buffer with a pattern no read leaves behind (the timed baseline runs
     * wrote the file's bytes into it too), reads the whole file with Phoenix once more and
     * compares every byte, copied back from the device where Java cannot touch it. Expected
     * bytes come from the generator for a generated file, so a bench file changed since it was
     * written fails, and from a plain FileChannel read for --file. Null when all match,
     * otherwise where they first differ.
     */
    private String verify(PhxFile pf, Path p, boolean generated, Device device, RegisteredBuffer buf, long fileSize,
                          MemorySegment staging) throws IOException {
        int chunk = (int) Math.min(staging.byteSize(), fileSize);
        MemorySegment got = staging.asSlice(0, chunk);
        for (long off = 0; off < fileSize; off += chunk) {
            int n = (int) Math.min(chunk, fileSize - off);
            if (device != null && !device.isHostMemory()) {
                got.fill((byte) 0xA5);
                device.copyToDevice(got.asSlice(0, n), buf, off);
            } else {
                buf.segment().orElseThrow().asSlice(off, n).fill((byte) 0xA5);
            }
        }
        phoenixWholeFile(pf, buf, fileSize);
        BenchFile.Content content = generated ? new BenchFile.Content() : null;
        byte[] want = new byte[chunk];
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            for (long off = 0; off < fileSize; off += chunk) {
                int n = (int) Math.min(chunk, fileSize - off);
                MemorySegment g = got.asSlice(0, n);
                if (device != null) device.copyToHost(buf, off, g);
                else MemorySegment.copy(buf.segment().orElseThrow(), off, g, 0, n);
                if (generated) content.get(off, want, n);
                else readFully(ch, ByteBuffer.wrap(want, 0, n), off);
                long at = g.mismatch(MemorySegment.ofArray(want).asSlice(0, n));
                if (at != -1) {
                    return "byte " + (off + at) + " read by phoenix differs from "
                            + (generated ? "what the generator wrote to " : "a plain read of ") + p;
                }
            }
        }
        return null;
    }

    private void report(PrintWriter out, Path path, long fileSize, String targetName, int n, double ceil, double ours,
                        double base, double[] ceilRuns, double[] oursRuns, double[] baseRuns, List<Point> sweep,
                        Device device, String mismatch, boolean reliable, Path cached) throws IOException {
        // each row says what it measures: the ceiling has Phoenix's thread count and is the
        // headline; the single-thread loop is what a plain program gets, not a like-for-like
        // rival, and the device copy in it is libphoenix's serialised one
        String phoenixWhat = n + " workers, one batch of 64 MiB requests, into " + (device == null ? "host memory" : "device " + device.id());
        String ceilingWhat = n + " threads pread 8 MiB chunks into host memory (no copy to the target)";
        String baseName = needsCopy(device) ? "pread+copy, 1 thread" : "pread, 1 thread";
        String baseWhat = needsCopy(device)
                ? "1 thread: pread 8 MiB into a host buffer, then Device.copyToDevice (libphoenix's serialised copy stream)"
                : "1 thread: pread 8 MiB chunks into the same host buffer";
        String sweepBaseWhat = "per point: as many threads as the depth, each with one pread"
                + (needsCopy(device) ? " + Device.copyToDevice" : "") + " of the io size in flight";
        if (json) {
            try (JsonGenerator g = new JsonFactory().configure(JsonGenerator.Feature.AUTO_CLOSE_TARGET, false).createGenerator(out)) {
                g.useDefaultPrettyPrinter();
                g.writeStartObject();
                g.writeStringField("file", path.toString());
                if (cached != null) g.writeStringField("cached_file", cached.toString());
                g.writeNumberField("bytes", fileSize);
                g.writeStringField("target", targetName);
                g.writeStringField("io", direct ? "O_DIRECT" : "page cache");
                g.writeNumberField("ceiling_threads", n);
                g.writeNumberField("repeat", repeat);
                g.writeBooleanField("verified", mismatch == null);
                if (mismatch != null) g.writeStringField("verify_error", mismatch);
                g.writeBooleanField("reliable", reliable);
                if (!reliable) {
                    g.writeStringField("unreliable_because", "the file is under " + Sizes.format(MIN_RELIABLE_BYTES)
                            + ": set-up costs dominate its read time, so rates and ratios are unreliable");
                }
                g.writeObjectFieldStart("whole_file");
                g.writeNumberField("ceiling_gbps", round(ceil));
                g.writeStringField("ceiling", ceilingWhat);
                g.writeNumberField("phoenix_gbps", round(ours));
                g.writeStringField("phoenix", phoenixWhat);
                g.writeNumberField("baseline_gbps", round(base));
                g.writeStringField("baseline", baseName);
                g.writeStringField("baseline_measures", baseWhat);
                g.writeNumberField("phoenix_vs_ceiling", round(ours / ceil));
                g.writeNumberField("phoenix_vs_baseline", round(ours / base));
                g.writeNumberField("spread", round(spread(oursRuns, ceilRuns)));
                g.writeBooleanField("noisy", spread(oursRuns, ceilRuns) > Point.NOISY);
                writeRuns(g, "ceiling_runs_gbps", ceilRuns);
                writeRuns(g, "phoenix_runs_gbps", oursRuns);
                writeRuns(g, "baseline_runs_gbps", baseRuns);
                g.writeEndObject();
                g.writeStringField("sweep_baseline", sweepBaseWhat);
                g.writeArrayFieldStart("sweep");
                for (Point p : sweep) {
                    g.writeStartObject();
                    g.writeNumberField("io_size", p.ioSize());
                    g.writeNumberField("depth", p.depth());
                    g.writeNumberField("phoenix_gbps", round(p.phoenixGbps()));
                    g.writeNumberField("iops", Math.round(p.iops()));
                    g.writeNumberField("baseline_gbps", round(p.baselineGbps()));
                    g.writeNumberField("baseline_threads", p.depth());
                    g.writeNumberField("single_thread_gbps", round(p.singleThreadGbps()));
                    g.writeNumberField("phoenix_vs_baseline", round(p.ratio()));
                    g.writeNumberField("spread", round(p.spread()));
                    g.writeBooleanField("noisy", p.noisy());
                    g.writeEndObject();
                }
                g.writeEndArray();
                g.writeStringField("verdict", verdict(ours, ceil, oursRuns, ceilRuns, reliable, mismatch));
                if (!sweep.isEmpty()) {
                    g.writeStringField("sweep_verdict", sweepVerdict(sweep));
                }
                g.writeEndObject();
            }
            out.println();
            out.flush();
            return;
        }
        out.printf("file %s (%s, %s), target %s%n", path, Sizes.format(fileSize), direct ? "O_DIRECT" : "page cache", targetName);
        out.printf("verified: %s%n", mismatch == null ? "every byte phoenix read is the file's" : "NO, " + mismatch);
        if (!reliable) {
            out.printf("UNRELIABLE: the file is under %s; set-up costs dominate, so the rates and ratios below mean little%n",
                    Sizes.format(MIN_RELIABLE_BYTES));
        }
        out.printf("whole file, median of %d runs:%n", repeat);
        out.printf("  %-9s %8.2f GB/s  %.2fx ceiling    %s%n", "phoenix", ours, ours / ceil, phoenixWhat);
        out.printf("  %-9s %8.2f GB/s                  %s%n", "ceiling", ceil, ceilingWhat);
        out.printf("  %-9s %8.2f GB/s  phoenix %.2fx   %s%n", "baseline", base, ours / base, baseWhat);
        if (!sweep.isEmpty()) {
            out.printf("%nsweep: phoenix with <depth> reads of <io size> per batch; baseline: %s%n", sweepBaseWhat);
            // a request larger than the split size runs on several workers at once: at depth 1
            // that is concurrency the one-thread baseline does not have, so say so where it applies
            out.printf("(phoenix splits each request over its workers, in pieces of PHX_CHUNK_MB into host memory"
                    + " or of the slot size into a device, so a large read at depth 1 is already parallel)%n");
            out.printf("%-9s %5s %12s %12s %14s %9s %14s%n", "io size", "depth", "phoenix GB/s", "IOPS", "baseline GB/s",
                    "ratio", "1 thread GB/s");
            for (Point p : sweep) {
                out.printf("%-9s %5d %12.3f %12.0f %14.3f %8.2fx %14.3f%s%n", Sizes.format(p.ioSize()), p.depth(), p.phoenixGbps(),
                        p.iops(), p.baselineGbps(), p.ratio(), p.singleThreadGbps(),
                        p.noisy() ? String.format(Locale.ROOT, "  noisy (runs %.0f%% apart)", 100 * p.spread()) : "");
            }
        }
        out.printf("%nverdict: %s%n", verdict(ours, ceil, oursRuns, ceilRuns, reliable, mismatch));
        if (!sweep.isEmpty()) {
            out.printf("sweep: %s%n", sweepVerdict(sweep));
        }
        if (cached != null) {
            out.printf("%nthe generated file stays for later runs: %s (%s); phoenix bench --clean%s removes it%n", cached,
                    Sizes.format(fileSize), dir == null ? "" : " --dir " + dir);
        }
        out.flush();
    }

    /** How far apart the runs of either series are, relative to its median: 0.1 is 10 %. */
    static double spread(double[]... series) {
        double worst = 0;
        for (double[] runs : series) {
            if (runs.length < 2) {
                continue;
            }
            double lo = Arrays.stream(runs).min().orElse(0);
            double hi = Arrays.stream(runs).max().orElse(0);
            worst = Math.max(worst, (hi - lo) / median(runs));
        }
        return worst;
    }

    /** The whole-file comparison in one sentence: what a user should conclude from the table. */
    static String verdict(double ours, double ceil, double[] oursRuns, double[] ceilRuns, boolean reliable, String mismatch) {
        if (mismatch != null) {
            return "FAILED: phoenix read wrong bytes; no rate counts";
        }
        if (!reliable) {
            return "none: the file is too small for its rates to mean anything (use --size 1g or more)";
        }
        double r = ours / ceil;
        double spread = spread(oursRuns, ceilRuns);
        String noise = spread > Point.NOISY
                ? String.format(Locale.ROOT, "; the runs are %.0f%% apart, so the machine was busy or drifting: rerun with"
                        + " --repeat 5 on an idle machine before trusting it", 100 * spread)
                : oursRuns.length < 3 ? "; fewer than 3 runs, so no spread is known" : "";
        String what;
        if (r >= 1.1) {
            what = String.format(Locale.ROOT, "phoenix is %.2fx the CPU-copy ceiling: the ceiling's threads each wait"
                    + " for their own pread, while phoenix keeps several reads in flight per worker, so the ceiling is"
                    + " a reference, not a hard limit; phoenix is at least as fast as plain reads here", r);
        } else if (r >= 0.9) {
            what = String.format(Locale.ROOT, "phoenix reads at the CPU-copy ceiling (%.2fx): what this machine's"
                    + " page cache and memory copy allow, so the transfer path adds nothing measurable", r);
        } else if (r >= 0.7) {
            what = String.format(Locale.ROOT, "phoenix reaches %.2fx of the CPU-copy ceiling: close, with a cost"
                    + " that shows; try --threads / PHX_WORKERS equal to the cores, or --size 4g", r);
        } else {
            what = String.format(Locale.ROOT, "phoenix reaches only %.2fx of the CPU-copy ceiling: something limits it"
                    + " (a busy machine, too few workers, a slow device copy); phoenix info says which path it took", r);
        }
        return what + noise;
    }

    /** The sweep in one sentence: from which request size phoenix keeps up with the same number of threads. */
    static String sweepVerdict(List<Point> sweep) {
        List<Point> trusted = sweep.stream().filter(p -> !p.noisy()).toList();
        long noisy = sweep.size() - trusted.size();
        String flagged = noisy == 0 ? "" : "; " + noisy + " of " + sweep.size() + " points are noisy (marked) and left out";
        if (trusted.isEmpty()) {
            return "every point is noisy: rerun on an idle machine" + flagged;
        }
        long from = -1;
        for (Point p : trusted) {
            boolean laterAllGood = trusted.stream().filter(q -> q.ioSize() >= p.ioSize()).allMatch(q -> q.ratio() >= 0.9);
            if (laterAllGood && (from < 0 || p.ioSize() < from)) {
                from = p.ioSize();
            }
        }
        double worst = trusted.stream().mapToDouble(Point::ratio).min().orElse(1);
        if (from == trusted.stream().mapToLong(Point::ioSize).min().orElse(0)) {
            return String.format(Locale.ROOT, "phoenix keeps up with as many threads of pread at every size (>= 0.90x,"
                    + " worst %.2fx)%s", worst, flagged);
        }
        if (from < 0) {
            return String.format(Locale.ROOT, "phoenix is below the threads of pread at some size up to the largest"
                    + " (worst %.2fx): for requests this size, plain threads are the faster way on this machine%s", worst, flagged);
        }
        return String.format(Locale.ROOT, "phoenix keeps up (>= 0.90x) from %s requests; below that (worst %.2fx) each"
                + " request's hand-off to a worker costs more than the read itself, so batch small reads or read larger"
                + " pieces%s", Sizes.format(from), worst, flagged);
    }

    private static void writeRuns(JsonGenerator g, String name, double[] runs) throws IOException {
        g.writeArrayFieldStart(name);
        for (double r : runs) g.writeNumber(round(r));
        g.writeEndArray();
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
