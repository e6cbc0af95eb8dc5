package io.phxfs.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.SafetensorsHeader;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix load-bench PATH}: in one run on one model (page cache warmed first), the
 * WeightLoader beside the loops a user would write, each row labelled with what it measures
 * and compared only with rows that do the same work: a mapping (the host default for warm
 * files: no bytes copied) against mmap + a touch of every page, copies into fresh memory
 * against copies into fresh memory (allocated the same way as the loader's). With
 * {@code --device N} the Java loops copy through a 16 MiB host buffer into device memory, and
 * the peak RSS shows whether host memory stayed bounded (bounce slots). Every rate is file
 * bytes per second; each run includes allocating the destination.
 */
@Command(name = "load-bench", mixinStandardHelpOptions = true,
        description = {"Compares loading safetensors weights with the WeightLoader against dd, a FileChannel loop and mmap"
                + " loops, like with like (mappings with mappings, copies with copies); reports peak RSS.",
                "PATH is what load accepts: a .safetensors file, a model directory or an index file.",
                "With s3://BUCKET/PREFIX/: the loader against the same server's raw parallel ranged GETs (same"
                        + " concurrency PHX_S3_CONCURRENCY and range size PHX_S3_RANGE_MB), rounds alternating.",
                "Target: device 0 unless --device N or --host (as load); host memory where there is no accelerator.",
                "Peak RSS counts the file pages a mapping makes resident (the page cache, shared) as well as copies:"
                        + " both are shown apart."})
final class LoadBenchCommand implements Callable<Integer> {
    private static final int CHUNK = 16 << 20;
    private static final long MAP_WINDOW = 1L << 30;
    private static final int PAGE = 4096;

    @Parameters(index = "0", paramLabel = "PATH", converter = ModelPaths.class,
            description = "A .safetensors file, a model directory or an index file, or s3://BUCKET/PREFIX/.")
    Path path;

    @ArgGroup(exclusive = true)
    TargetOptions target = new TargetOptions();

    @Option(names = "--repeat", defaultValue = "3", description = "Runs of each reader; medians are reported (default: ${DEFAULT-VALUE}).")
    int repeat;

    @Option(names = "--direct", description = "O_DIRECT for dd and Phoenix, page cache not warmed (cold reads).")
    boolean direct;

    @Option(names = "--no-dd", description = "Leave dd out.")
    boolean noDd;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    @Option(names = "--quiet", description = "No progress lines on stderr.")
    boolean quiet;

    @Spec
    CommandSpec spec;

    /** Keeps the page touches of the mmap + touch reader from being optimised away. */
    static volatile long touched;

    /** The work a reader does: rows are compared only within one kind. */
    enum Kind { MAPPING, COPY }

    /** One reader's runs, in GB/s, and what it measures. */
    record Reader(String key, String label, Kind kind, double[] runs) {
        double median() {
            double[] s = runs.clone();
            Arrays.sort(s);
            return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
        }

        Reader as(String newLabel, Kind newKind) {
            return new Reader(key, newLabel, newKind, runs);
        }
    }

    @Override
    public Integer call() throws Exception {
        if (repeat < 1) {
            throw new ParameterException(spec.commandLine(), "Error: --repeat must be >= 1, was " + repeat);
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Progress progress = new Progress(err, quiet);
        if (io.phxfs.safetensors.s3.S3FileSystemProvider.isS3(path)) {
            // objects: no page cache, dd or mmap to compare with; the server's raw ranged-GET rate instead
            Device d = target.resolve(Phoenix.open(), false);
            target.announce(err, quiet);
            return S3LoadBench.run(path, d, d == null ? "host memory" : "device " + d.id(), repeat, json, progress, out);
        }
        ModelFiles model = ModelFiles.open(path);
        List<SafetensorsHeader> files = model.files();
        long size = files.stream().mapToLong(SafetensorsHeader::fileSize).sum();
        boolean reliable = size >= BenchCommand.MIN_RELIABLE_BYTES;
        if (!reliable) {
            // a few MiB load in milliseconds: opening files, allocating, mapping and starting the
            // workers are most of that, so a rate says little about throughput. Not progress:
            // said with --quiet too.
            err.printf("phoenix: load-bench: warning: %s is too small to measure throughput (under %s): fixed costs"
                    + " dominate, so the rates and ratios are not meaningful; use a model of %s or more%n",
                    LoadCommand.human(size), Sizes.format(BenchCommand.MIN_RELIABLE_BYTES),
                    Sizes.format(BenchCommand.MIN_RELIABLE_BYTES));
            err.flush();
        }
        Phoenix phx = Phoenix.open();
        // the same default as load: device 0 where there is an accelerator, host memory where there is none
        Device device = target.resolve(phx, false);
        target.announce(err, quiet);
        String targetName = device == null ? "host memory" : "device " + device.id() + " (" + device.name() + ", mode "
                + device.mode().name().toLowerCase(Locale.ROOT) + ")";
        progress.step("%s: %s in %d file%s, %d tensors; target %s", path, LoadCommand.human(size), files.size(),
                files.size() == 1 ? "" : "s", model.names().size(), targetName);

        if (!direct) {
            progress.step("warming the page cache");
            for (SafetensorsHeader h : files) {
                warm(h.file(), h.fileSize());
            }
        }
        long hwmAfterLoad = -1;
        long rssAfterLoad = -1;
        long anonAfterLoad = -1;
        long fileAfterLoad = -1;
        boolean verified = false;
        boolean mapped = false;
        String into = device == null ? "fresh host memory" : "device " + device.id();
        Reader phoenix = new Reader("phoenix", "phoenix load (WeightLoader) into " + into, Kind.COPY, new double[repeat]);
        Reader copy = null;
        Reader touch = null;
        Reader channel = new Reader("filechannel", device == null ? "FileChannel read loop into fresh host memory, 1 thread"
                : "FileChannel read + Device.copyToDevice loop, 1 thread", Kind.COPY, new double[repeat]);
        Reader mmap = new Reader("mmap", device == null ? "mmap + copy loop into fresh host memory, 1 thread"
                : "mmap + Device.copyToDevice loop, 1 thread", Kind.COPY, new double[repeat]);
        // dd copies each block into the same buffer and drops it: no destination is allocated
        Reader dd = noDd ? null : new Reader("dd", "dd bs=16M to /dev/null (one reused buffer, no destination)", Kind.COPY,
                new double[repeat]);
        WeightLoader copyLoader = WeightLoader.builder().toHost().direct(direct).writable(true).build();
        // host copies into memory reused from the previous load (a process that loads more
        // than once): primed by two untimed loads, so every timed run reuses memory in its
        // steady state. Pages placed by UFFDIO_COPY (libphoenix's fresh_fill) cost the
        // kernel's next write to them once more on some VMs (the 2-core build machine: the
        // second load into a pool ran at 0.7 GB/s, the third and later at 10-16)
        io.phxfs.core.HostMemoryPool pool = device == null ? phx.host().pool(Long.MAX_VALUE) : null;
        WeightLoader pooledLoader = pool == null ? null
                : WeightLoader.builder().toHost().direct(direct).writable(true).hostMemory(pool).build();
        Reader pooled = pool == null ? null : new Reader("phoenix_copy_pooled",
                "phoenix load --copy into reused host memory (HostMemoryPool, after two untimed loads)", Kind.COPY,
                new double[repeat]);
        if (pool != null) {
            pooledLoader.load(model).close();
            pooledLoader.load(model).close();
        }
        // after the pool is primed: it keeps a model's worth of memory for the pooled row, which
        // is no part of the first load's growth (it was +435 MiB for a 214 MiB model, unexplained)
        long hwmBefore = ProcStatus.peakRss();
        long anonBefore = ProcStatus.rssAnon();
        long fileBefore = ProcStatus.rssFile(); // the JVM's own jars and libraries
        WeightLoader loader = (device == null ? WeightLoader.builder().toHost() : WeightLoader.builder().toDevice(device))
                .direct(direct).build();
        for (int r = 0; r < repeat; r++) {
            // Phoenix first: the peak RSS after its first load is not yet raised by the Java loops
            progress.step("run %d/%d: phoenix", r + 1, repeat);
            long t0 = System.nanoTime();
            try (LoadedModel m = loader.load(model)) {
                phoenix.runs()[r] = gbps(size, t0);
                if (r == 0) {
                    hwmAfterLoad = ProcStatus.peakRss();
                    rssAfterLoad = ProcStatus.rss();
                    anonAfterLoad = ProcStatus.rssAnon();
                    fileAfterLoad = ProcStatus.rssFile();
                    verified = verify(m, files);
                    if (!verified) {
                        throw new IllegalStateException("data loaded by Phoenix differs from " + path);
                    }
                    mapped = m.hostMapped();
                    if (mapped) {
                        // a mapping moves no bytes: its rivals are another mapping, and the
                        // loader's own copy stands beside the other copies
                        phoenix = phoenix.as("phoenix load, mapped read-only (the default for warm files)", Kind.MAPPING);
                        touch = new Reader("mmap_touch", "mmap + read of one byte per 4 KiB page, 1 thread", Kind.MAPPING,
                                new double[repeat]);
                        copy = new Reader("phoenix_copy", "phoenix load --copy into fresh writable host memory", Kind.COPY,
                                new double[repeat]);
                    }
                }
            }
            if (copy != null) {
                progress.step("run %d/%d: phoenix, copied", r + 1, repeat);
                long t1 = System.nanoTime();
                try (LoadedModel m = copyLoader.load(model)) {
                    copy.runs()[r] = gbps(size, t1);
                }
            }
            if (pooled != null) {
                progress.step("run %d/%d: phoenix, copied into reused memory", r + 1, repeat);
                long t2 = System.nanoTime();
                try (LoadedModel m = pooledLoader.load(model)) {
                    pooled.runs()[r] = gbps(size, t2);
                    if (r == 0 && !verify(m, files)) {
                        throw new IllegalStateException("data loaded by Phoenix into reused memory differs from " + path);
                    }
                }
            }
            if (touch != null) {
                progress.step("run %d/%d: mmap + touch", r + 1, repeat);
                touch.runs()[r] = mmapTouch(files, size);
            }
            progress.step("run %d/%d: FileChannel loop", r + 1, repeat);
            channel.runs()[r] = fileChannelLoop(phx, device, files, size);
            progress.step("run %d/%d: mmap + copy loop", r + 1, repeat);
            mmap.runs()[r] = mmapLoop(phx, device, files, size);
            if (dd != null) {
                progress.step("run %d/%d: dd", r + 1, repeat);
                dd.runs()[r] = dd(files, size);
            }
        }
        // the device's pinned pool, allocated when it opened: the most pinned memory its I/O uses
        long bounce = device == null || device.isHostMemory() || device.mode() != io.phxfs.core.Mode.BOUNCE ? 0
                : Long.parseLong(Phoenix.open().getConfig("pinned_mb")) << 20;
        List<Reader> readers = new ArrayList<>();
        if (pool != null) {
            pool.close();
        }
        for (Reader x : new Reader[] {touch, phoenix, dd, channel, mmap, copy, pooled}) {
            if (x != null && !Double.isNaN(x.median())) {
                readers.add(x);
            }
        }
        Report report = new Report(targetName, size, files.size(), mapped, readers, hwmBefore, hwmAfterLoad, rssAfterLoad,
                ProcStatus.peakRss(), bounce, verified, reliable, anonAfterLoad - anonBefore, fileAfterLoad - fileBefore,
                pool != null ? size : 0);
        if (json) {
            report.json(out);
        } else {
            report.text(out);
        }
        out.flush();
        return 0;
    }

    private static double gbps(long bytes, long t0) {
        return bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
    }

    /** Reads the file once through a small buffer: into the page cache, not into our RSS. */
    private static void warm(Path file, long size) throws IOException {
        ByteBuffer b = ByteBuffer.allocateDirect(CHUNK);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            for (long pos = 0; pos < size; ) {
                b.clear();
                int n = ch.read(b, pos);
                if (n < 0) {
                    break;
                }
                pos += n;
            }
        }
    }

    /** Compares the first and last bytes (up to 4 KiB each) of up to 64 tensors with their files. */
    private static boolean verify(LoadedModel m, List<SafetensorsHeader> files) throws IOException {
        Map<Path, SafetensorsHeader> byPath = new HashMap<>();
        for (SafetensorsHeader h : files) {
            byPath.put(h.file(), h);
        }
        List<LoadedTensor> all = new ArrayList<>(m.tensors().values());
        int step = Math.max(1, all.size() / 64);
        for (int i = 0; i < all.size(); i += step) {
            LoadedTensor t = all.get(i);
            SafetensorsHeader header = byPath.get(t.file());
            long n = Math.min(4096, t.nbytes());
            if (n == 0) {
                continue;
            }
            try (FileChannel ch = FileChannel.open(t.file(), StandardOpenOption.READ)) {
                for (long off : new long[] {0, t.nbytes() - n}) {
                    byte[] got = new byte[(int) n];
                    t.copyTo(off, MemorySegment.ofArray(got));
                    ByteBuffer want = ByteBuffer.allocate((int) n);
                    long pos = header.fileOffset(t.info()) + off;
                    while (want.hasRemaining() && ch.read(want, pos + want.position()) >= 0) {
                        // read on
                    }
                    if (!Arrays.equals(got, want.array())) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /**
     * Host: fresh memory allocated as the loader's copy allocates it, so both pay the same
     * page faults and neither a zero-fill the other skips. Device: device memory.
     */
    private static RegisteredBuffer destination(Phoenix phx, Device device, long size) {
        return device == null ? phx.host().allocateHuge(size) : device.allocate(size);
    }

    /** The loop a user writes: read 16 MiB at a time into the destination (host) or a staging buffer (device). */
    private static double fileChannelLoop(Phoenix phx, Device device, List<SafetensorsHeader> files, long size)
            throws IOException {
        long t0 = System.nanoTime();
        try (Arena arena = Arena.ofConfined(); RegisteredBuffer dst = destination(phx, device, size)) {
            MemorySegment staging = device == null ? null : arena.allocate(CHUNK, 4096);
            long base = 0;
            for (SafetensorsHeader h : files) {
                try (FileChannel ch = FileChannel.open(h.file(), StandardOpenOption.READ)) {
                    for (long pos = 0; pos < h.fileSize(); pos += CHUNK) {
                        long n = Math.min(CHUNK, h.fileSize() - pos);
                        if (device == null) {
                            readFully(ch, dst.segment().orElseThrow().asSlice(base + pos, n).asByteBuffer(), pos);
                        } else {
                            MemorySegment s = staging.asSlice(0, n);
                            readFully(ch, s.asByteBuffer(), pos);
                            device.copyToDevice(s, dst, base + pos);
                        }
                    }
                }
                base += h.fileSize();
            }
        }
        return gbps(size, t0);
    }

    /** FileChannel.map windows copied 16 MiB at a time into the destination. */
    private static double mmapLoop(Phoenix phx, Device device, List<SafetensorsHeader> files, long size) throws IOException {
        long t0 = System.nanoTime();
        try (RegisteredBuffer dst = destination(phx, device, size)) {
            long base = 0;
            for (SafetensorsHeader h : files) {
                try (FileChannel ch = FileChannel.open(h.file(), StandardOpenOption.READ)) {
                    for (long win = 0; win < h.fileSize(); win += MAP_WINDOW) {
                        long wlen = Math.min(MAP_WINDOW, h.fileSize() - win);
                        try (Arena mapArena = Arena.ofConfined()) {
                            MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, win, wlen, mapArena);
                            for (long off = 0; off < wlen; off += CHUNK) {
                                long n = Math.min(CHUNK, wlen - off);
                                if (device == null) {
                                    MemorySegment.copy(map, off, dst.segment().orElseThrow(), base + win + off, n);
                                } else {
                                    device.copyToDevice(map.asSlice(off, n), dst, base + win + off);
                                }
                            }
                        }
                    }
                }
                base += h.fileSize();
            }
        }
        return gbps(size, t0);
    }

    /**
     * The mapping a user writes: map every file and read one byte of each page, so that every
     * page is in the page table as after the loader's populated mapping; no byte is copied.
     * The mappings stay until all files are touched, as the loader's stay for the model's life.
     */
    private static double mmapTouch(List<SafetensorsHeader> files, long size) throws IOException {
        long t0 = System.nanoTime();
        long sum = 0;
        try (Arena arena = Arena.ofConfined()) {
            for (SafetensorsHeader h : files) {
                try (FileChannel ch = FileChannel.open(h.file(), StandardOpenOption.READ)) {
                    MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, 0, h.fileSize(), arena);
                    for (long off = 0; off < h.fileSize(); off += PAGE) {
                        sum += map.get(ValueLayout.JAVA_BYTE, off);
                    }
                }
            }
        }
        touched = sum;
        return gbps(size, t0);
    }

    private static void readFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b, pos + b.position()) < 0) {
                throw new IOException("unexpected end of file at " + (pos + b.position()));
            }
        }
    }

    private static final Pattern DD_BYTES = Pattern.compile("^(\\d+) bytes", Pattern.MULTILINE);

    /** dd as a subprocess per file, timed here; its byte counts must be the files' sizes. NaN where dd is missing. */
    private double dd(List<SafetensorsHeader> files, long size) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        for (SafetensorsHeader h : files) {
            List<String> cmd = new ArrayList<>(List.of("dd", "if=" + h.file(), "of=/dev/null", "bs=16M"));
            if (direct) {
                cmd.add("iflag=direct");
            }
            Process p;
            try {
                p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            } catch (IOException e) {
                return Double.NaN;
            }
            String err;
            try (InputStream in = p.getErrorStream()) {
                err = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            if (!p.waitFor(1, TimeUnit.HOURS) || p.exitValue() != 0) {
                throw new IOException("dd failed: " + err.trim());
            }
            Matcher m = DD_BYTES.matcher(err);
            if (!m.find() || Long.parseLong(m.group(1)) != h.fileSize()) {
                throw new IOException("dd did not report reading " + h.fileSize() + " bytes of " + h.file() + ": " + err.trim());
            }
        }
        return gbps(size, t0);
    }

    private record Report(String target, long size, int fileCount, boolean mapped, List<Reader> readers,
                          long hwmBefore, long hwmAfterLoad, long rssAfterLoad, long hwmEnd, long bounceBytes,
                          boolean verified, boolean reliable, long anonGrowth, long fileGrowth, long poolBytes) {
        /** The rivals of {@code x}: readers of its kind that are not Phoenix's. */
        List<Reader> rivals(Reader x) {
            return readers.stream().filter(b -> b.kind() == x.kind() && !b.key().startsWith("phoenix")).toList();
        }

        List<Reader> phoenixes() {
            return readers.stream().filter(b -> b.key().startsWith("phoenix")).toList();
        }

        void json(PrintWriter out) throws IOException {
            JsonGenerator g = new JsonFactory().createGenerator(out);
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField("target", target);
            g.writeNumberField("bytes", size);
            g.writeNumberField("files", fileCount);
            g.writeNumberField("repeat", readers.get(0).runs().length);
            g.writeBooleanField("verified", verified);
            g.writeBooleanField("phoenix_mapped", mapped);
            g.writeBooleanField("reliable", reliable);
            if (!reliable) {
                g.writeStringField("unreliable_because", "the model is under " + Sizes.format(BenchCommand.MIN_RELIABLE_BYTES)
                        + ": fixed costs dominate its load time, so rates and ratios are not meaningful");
            }
            g.writeObjectFieldStart("gb_per_s");
            for (Reader b : readers) {
                g.writeNumberField(b.key(), r(b.median()));
            }
            g.writeEndObject();
            g.writeObjectFieldStart("measures");
            for (Reader b : readers) {
                g.writeStringField(b.key(), b.label() + " (" + b.kind().name().toLowerCase(Locale.ROOT) + ")");
            }
            g.writeEndObject();
            // like with like only: phoenix_vs for the loader's default, phoenix_copy_vs for its copy
            for (Reader p : phoenixes()) {
                g.writeObjectFieldStart(p.key() + "_vs");
                for (Reader b : rivals(p)) {
                    g.writeNumberField(b.key(), r(p.median() / b.median()));
                }
                g.writeEndObject();
            }
            g.writeObjectFieldStart("runs_gb_per_s");
            for (Reader x : readers) {
                g.writeArrayFieldStart(x.key());
                for (double v : x.runs()) {
                    g.writeNumber(r(v));
                }
                g.writeEndArray();
            }
            g.writeEndObject();
            g.writeObjectFieldStart("memory");
            g.writeNumberField("vmhwm_before_bytes", hwmBefore);
            g.writeNumberField("vmhwm_after_first_load_bytes", hwmAfterLoad);
            g.writeNumberField("vmrss_after_first_load_bytes", rssAfterLoad);
            g.writeNumberField("vmhwm_growth_during_load_bytes", hwmAfterLoad - hwmBefore);
            g.writeNumberField("vmhwm_end_bytes", hwmEnd);
            g.writeNumberField("bounce_slot_bytes", bounceBytes);
            g.writeNumberField("rss_anon_growth_during_load_bytes", anonGrowth);
            g.writeNumberField("rss_file_growth_during_load_bytes", fileGrowth);
            g.writeNumberField("pool_bytes_before_load", poolBytes);
            g.writeEndObject();
            g.writeEndObject();
            g.flush();
            out.println();
        }

        void text(PrintWriter out) {
            out.printf(Locale.ROOT, "%s in %d file%s, target %s, median of %d runs (file bytes per second, destination"
                            + " allocated each run):%n", LoadCommand.human(size), fileCount, fileCount == 1 ? "" : "s",
                    target, readers.get(0).runs().length);
            if (!reliable) {
                out.printf("UNRELIABLE: the model is under %s; fixed costs dominate, so the rates and ratios below mean"
                        + " little%n", Sizes.format(BenchCommand.MIN_RELIABLE_BYTES));
            }
            // as wide as the longest label: a fixed width misaligned the pooled row
            int width = readers.stream().mapToInt(x -> x.label().length()).max().orElse(0);
            int keyWidth = readers.stream().mapToInt(x -> x.key().length()).max().orElse(0);
            for (Kind k : Kind.values()) {
                List<Reader> rows = readers.stream().filter(x -> x.kind() == k).toList();
                if (rows.isEmpty()) {
                    continue;
                }
                out.println(k == Kind.MAPPING ? " mappings (no bytes copied; every page mapped):"
                        : " copies (every byte moved into the destination):");
                for (Reader x : rows) {
                    StringBuilder ratios = new StringBuilder();
                    if (x.key().startsWith("phoenix")) {
                        for (Reader b : rivals(x)) {
                            ratios.append(String.format(Locale.ROOT, "  %.2fx %s", x.median() / b.median(), b.key()));
                        }
                    }
                    out.printf(Locale.ROOT, "  %-" + keyWidth + "s  %-" + width + "s %8.2f GB/s%s%n", x.key(), x.label(),
                            x.median(), ratios);
                }
            }
            out.printf(Locale.ROOT, "peak RSS (VmHWM): %s before, %s after the first load (+%s), %s at the end; RSS after load %s%s%n",
                    LoadCommand.human(hwmBefore), LoadCommand.human(hwmAfterLoad),
                    LoadCommand.human(Math.max(0, hwmAfterLoad - hwmBefore)), LoadCommand.human(hwmEnd),
                    LoadCommand.human(rssAfterLoad),
                    bounceBytes > 0 ? "; bounce slots " + LoadCommand.human(bounceBytes) : "");
            // what the growth is made of: RSS counts mapped page-cache pages, which cost no memory
            // beyond the page cache the kernel keeps anyway
            out.printf(Locale.ROOT, "  of the first load: %s of new anonymous memory (copies, heap); %s of file pages mapped"
                            + " (the page cache, shared: no extra memory)%s%n",
                    LoadCommand.human(Math.max(0, anonGrowth)), LoadCommand.human(Math.max(0, fileGrowth)),
                    poolBytes > 0 ? "; measured after the pooled row's pool took " + LoadCommand.human(poolBytes) : "");
        }

        private static double r(double v) {
            return Math.round(v * 1000) / 1000.0;
        }
    }
}
