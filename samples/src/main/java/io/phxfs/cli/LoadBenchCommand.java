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
import io.phxfs.safetensors.SafetensorsParser;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix load-bench FILE}: in one run on one file (page cache warmed first), the rate
 * of {@code dd bs=16M}, of a plain FileChannel read loop, of an mmap + copy loop, and of the
 * WeightLoader, each into fresh memory of the target, with the process's peak RSS after the
 * first load. With {@code --device N} the Java loops copy through a 16 MiB host buffer into
 * device memory, and the peak RSS shows whether host memory stayed bounded (bounce slots).
 * Every rate is file bytes per second; each run includes allocating the destination.
 */
@Command(name = "load-bench", mixinStandardHelpOptions = true,
        description = {"Compares loading a .safetensors file with dd, a FileChannel loop and an mmap+copy loop; reports peak RSS.",
                "Target: host memory unless --device N."})
final class LoadBenchCommand implements Callable<Integer> {
    private static final int CHUNK = 16 << 20;
    private static final long MAP_WINDOW = 1L << 30;

    @Parameters(index = "0", paramLabel = "FILE", description = "A .safetensors file.")
    Path file;

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

    /** One reader's runs, in GB/s. */
    record Reader(String key, String label, double[] runs) {
        double median() {
            double[] s = runs.clone();
            Arrays.sort(s);
            return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (repeat < 1) {
            throw new IllegalArgumentException("--repeat must be >= 1, was " + repeat);
        }
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(file + ": not a regular file");
        }
        PrintWriter out = spec.commandLine().getOut();
        Progress progress = new Progress(spec.commandLine().getErr(), quiet);
        SafetensorsHeader header = SafetensorsParser.standard().parse(file);
        long size = header.fileSize();
        Phoenix phx = Phoenix.open();
        Device device = target.resolve(phx, true);
        String targetName = device == null ? "host memory" : "device " + device.id() + " (" + device.name() + ", mode "
                + device.mode().name().toLowerCase(Locale.ROOT) + ")";
        progress.step("%s: %s, %d tensors; target %s", file, LoadCommand.human(size), header.tensors().size(), targetName);

        if (!direct) {
            progress.step("warming the page cache");
            warm(file, size);
        }
        long hwmBefore = ProcStatus.peakRss();
        long hwmAfterLoad = -1;
        long rssAfterLoad = -1;
        boolean verified = false;
        Reader phoenix = new Reader("phoenix", "phoenix load (WeightLoader)", new double[repeat]);
        Reader channel = new Reader("filechannel", "FileChannel read loop, 1 thread", new double[repeat]);
        Reader mmap = new Reader("mmap", "mmap + copy loop, 1 thread", new double[repeat]);
        Reader dd = noDd ? null : new Reader("dd", "dd bs=16M", new double[repeat]);
        // host: the default maps page-cache-warm files; this row is the same load copied
        Reader copy = device == null ? new Reader("phoenix_copy", "phoenix load, copied (no mapping)", new double[repeat]) : null;
        WeightLoader copyLoader = WeightLoader.builder().toHost().direct(direct).mapHost(false).build();
        WeightLoader loader = (device == null ? WeightLoader.builder().toHost() : WeightLoader.builder().toDevice(device))
                .direct(direct).build();
        ModelFiles model = ModelFiles.of(header);
        for (int r = 0; r < repeat; r++) {
            // Phoenix first: the peak RSS after its first load is not yet raised by the Java loops
            progress.step("run %d/%d: phoenix", r + 1, repeat);
            long t0 = System.nanoTime();
            try (LoadedModel m = loader.load(model)) {
                phoenix.runs()[r] = gbps(size, t0);
                if (r == 0) {
                    hwmAfterLoad = ProcStatus.peakRss();
                    rssAfterLoad = ProcStatus.rss();
                    verified = verify(m, header);
                    if (!verified) {
                        throw new IllegalStateException("data loaded by Phoenix differs from " + file);
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
            progress.step("run %d/%d: FileChannel loop", r + 1, repeat);
            channel.runs()[r] = fileChannelLoop(device, size);
            progress.step("run %d/%d: mmap + copy loop", r + 1, repeat);
            mmap.runs()[r] = mmapLoop(device, size);
            if (dd != null) {
                progress.step("run %d/%d: dd", r + 1, repeat);
                dd.runs()[r] = dd(size);
            }
        }
        // the device's pinned pool, allocated when it opened: the most pinned memory its I/O uses
        long bounce = device == null || device.isHostMemory() || device.mode() != io.phxfs.core.Mode.BOUNCE ? 0
                : Long.parseLong(Phoenix.open().getConfig("pinned_mb")) << 20;
        Report report = new Report(targetName, size, phoenix, copy, channel, mmap, dd, hwmBefore, hwmAfterLoad, rssAfterLoad,
                ProcStatus.peakRss(), bounce, verified);
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

    /** Compares the first and last bytes (up to 4 KiB each) of up to 64 tensors with the file. */
    private boolean verify(LoadedModel m, SafetensorsHeader header) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            List<LoadedTensor> all = new ArrayList<>(m.tensors().values());
            int step = Math.max(1, all.size() / 64);
            for (int i = 0; i < all.size(); i += step) {
                LoadedTensor t = all.get(i);
                long n = Math.min(4096, t.nbytes());
                for (long off : new long[] {0, t.nbytes() - n}) {
                    if (n == 0) {
                        continue;
                    }
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

    /** The loop a user writes: read 16 MiB at a time into the destination (host) or a staging buffer (device). */
    private double fileChannelLoop(Device device, long size) throws IOException {
        long t0 = System.nanoTime();
        try (Arena arena = Arena.ofShared(); FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            if (device == null) {
                MemorySegment dst = arena.allocate(size, 4096);
                for (long pos = 0; pos < size; pos += CHUNK) {
                    readFully(ch, dst.asSlice(pos, Math.min(CHUNK, size - pos)).asByteBuffer(), pos);
                }
            } else {
                MemorySegment staging = arena.allocate(CHUNK, 4096);
                try (RegisteredBuffer dst = device.allocate(size)) {
                    for (long pos = 0; pos < size; pos += CHUNK) {
                        MemorySegment s = staging.asSlice(0, Math.min(CHUNK, size - pos));
                        readFully(ch, s.asByteBuffer(), pos);
                        device.copyToDevice(s, dst, pos);
                    }
                }
            }
        }
        return gbps(size, t0);
    }

    /** FileChannel.map windows copied 16 MiB at a time into the destination. */
    private double mmapLoop(Device device, long size) throws IOException {
        long t0 = System.nanoTime();
        try (Arena arena = Arena.ofShared(); FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment host = device == null ? arena.allocate(size, 4096) : null;
            try (RegisteredBuffer dev = device == null ? null : device.allocate(size)) {
                for (long win = 0; win < size; win += MAP_WINDOW) {
                    long wlen = Math.min(MAP_WINDOW, size - win);
                    try (Arena mapArena = Arena.ofConfined()) {
                        MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, win, wlen, mapArena);
                        for (long off = 0; off < wlen; off += CHUNK) {
                            long n = Math.min(CHUNK, wlen - off);
                            if (host != null) {
                                MemorySegment.copy(map, off, host, win + off, n);
                            } else {
                                device.copyToDevice(map.asSlice(off, n), dev, win + off);
                            }
                        }
                    }
                }
            }
        }
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

    /** dd as a subprocess, timed here; its own byte count must be the file's size. NaN where dd is missing. */
    private double dd(long size) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("dd", "if=" + file, "of=/dev/null", "bs=16M"));
        if (direct) {
            cmd.add("iflag=direct");
        }
        Process p;
        long t0 = System.nanoTime();
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
        double rate = gbps(size, t0);
        Matcher m = DD_BYTES.matcher(err);
        if (!m.find() || Long.parseLong(m.group(1)) != size) {
            throw new IOException("dd did not report reading " + size + " bytes: " + err.trim());
        }
        return rate;
    }

    private record Report(String target, long size, Reader phoenix, Reader copy, Reader channel, Reader mmap, Reader dd,
                          long hwmBefore, long hwmAfterLoad, long rssAfterLoad, long hwmEnd, long bounceBytes,
                          boolean verified) {
        List<Reader> baselines() {
            List<Reader> l = new ArrayList<>();
            if (dd != null && !Double.isNaN(dd.median())) {
                l.add(dd);
            }
            l.add(channel);
            l.add(mmap);
            if (copy != null) {
                l.add(copy);
            }
            return l;
        }

        void json(PrintWriter out) throws IOException {
            JsonGenerator g = new JsonFactory().createGenerator(out);
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField("target", target);
            g.writeNumberField("bytes", size);
            g.writeNumberField("repeat", phoenix.runs().length);
            g.writeBooleanField("verified", verified);
            g.writeObjectFieldStart("gb_per_s");
            g.writeNumberField("phoenix", r(phoenix.median()));
            for (Reader b : baselines()) {
                g.writeNumberField(b.key(), r(b.median()));
            }
            g.writeEndObject();
            g.writeObjectFieldStart("phoenix_vs");
            for (Reader b : baselines()) {
                g.writeNumberField(b.key(), r(phoenix.median() / b.median()));
            }
            g.writeEndObject();
            g.writeObjectFieldStart("runs_gb_per_s");
            for (Reader x : all()) {
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
            g.writeEndObject();
            g.writeEndObject();
            g.flush();
            out.println();
        }

        List<Reader> all() {
            List<Reader> l = new ArrayList<>(List.of(phoenix));
            l.addAll(baselines());
            return l;
        }

        void text(PrintWriter out) {
            out.printf(Locale.ROOT, "%s, target %s, median of %d runs (file bytes per second, destination allocated each run):%n",
                    LoadCommand.human(size), target, phoenix.runs().length);
            for (Reader b : baselines()) {
                out.printf(Locale.ROOT, "  %-36s %8.2f GB/s%n", b.label(), b.median());
            }
            StringBuilder ratios = new StringBuilder();
            for (Reader b : baselines()) {
                ratios.append(String.format(Locale.ROOT, "  %.2fx %s", phoenix.median() / b.median(), b.key()));
            }
            out.printf(Locale.ROOT, "  %-36s %8.2f GB/s %s%n", phoenix.label(), phoenix.median(), ratios);
            out.printf(Locale.ROOT, "peak RSS (VmHWM): %s before, %s after the first load (+%s), %s at the end; RSS after load %s%s%n",
                    LoadCommand.human(hwmBefore), LoadCommand.human(hwmAfterLoad),
                    LoadCommand.human(Math.max(0, hwmAfterLoad - hwmBefore)), LoadCommand.human(hwmEnd),
                    LoadCommand.human(rssAfterLoad),
                    bounceBytes > 0 ? "; bounce slots " + LoadCommand.human(bounceBytes) : "");
        }

        private static double r(double v) {
            return Math.round(v * 1000) / 1000.0;
        }
    }
}
