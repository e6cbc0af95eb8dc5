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
import io.phxfs.safetensors.s3.S3FileSystem;
import io.phxfs.safetensors.s3.S3Reads;
import io.phxfs.safetensors.s3.S3Settings;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * {@code phoenix load-bench s3://bucket/prefix/}: in one run, against one server, with the same
 * concurrency and range size, the WeightLoader from the URL (LIST, header GETs, plan, allocation,
 * parallel ranged GETs into place) beside the raw rate of that server: parallel ranged GETs of
 * every object's bytes, whole, into one fresh host buffer, with nothing else (sizes looked up
 * before the clock starts). Rounds alternate which goes first. Every rate is object bytes per
 * second; each run allocates its destination and starts with a fresh S3 file system, so the
 * loader's metadata requests are in its time, as they are in a real load.
 */
final class S3LoadBench {
    private S3LoadBench() {
    }

    static int run(Path path, Device device, String targetName, int repeat, boolean json, Progress progress,
                   PrintWriter out) throws IOException {
        S3Settings settings = S3Settings.fromEnvironment();
        ModelFiles model = ModelFiles.open(path);
        List<SafetensorsHeader> files = model.files();
        long size = files.stream().mapToLong(SafetensorsHeader::fileSize).sum();
        progress.step("%s: %s in %d object%s, %d tensors; target %s; %d GETs in flight, %s each (endpoint %s)", path,
                LoadCommand.human(size), files.size(), files.size() == 1 ? "" : "s", model.names().size(), targetName,
                settings.concurrency(), LoadCommand.human(settings.rangeBytes()),
                settings.endpoint().map(Object::toString).orElse("AWS"));
        Phoenix phx = Phoenix.open();
        double[] phoenix = new double[repeat];
        double[] raw = new double[repeat];
        boolean verified = false;
        long hwmBefore = ProcStatus.peakRss();
        long hwmAfterLoad = -1;
        for (int r = 0; r < repeat; r++) {
            boolean rawFirst = r % 2 == 0;
            for (int k = 0; k < 2; k++) {
                if ((k == 0) == rawFirst) {
                    progress.step("run %d/%d: raw ranged GETs", r + 1, repeat);
                    raw[r] = raw(phx, settings, path, files, size);
                } else {
                    progress.step("run %d/%d: phoenix load", r + 1, repeat);
                    try (S3FileSystem fs = S3FileSystem.open(settings)) {
                        Path p = fs.path(path.toString() + (path.toString().endsWith(".json")
                                || path.toString().endsWith(".safetensors") ? "" : "/"));
                        WeightLoader loader = (device == null ? WeightLoader.builder().toHost().writable(true)
                                : WeightLoader.builder().toDevice(device)).build();
                        long t0 = System.nanoTime();
                        try (LoadedModel m = loader.load(p)) {
                            phoenix[r] = size / ((System.nanoTime() - t0) / 1e9) / 1e9;
                            if (r == 0) {
                                hwmAfterLoad = ProcStatus.peakRss();
                                verified = verify(m);
                                if (!verified) {
                                    throw new IllegalStateException("data loaded by Phoenix differs from " + path);
                                }
                            }
                        }
                    }
                }
            }
        }
        double p = median(phoenix);
        double q = median(raw);
        if (json) {
            JsonGenerator g = new JsonFactory().createGenerator(out);
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField("source", path.toString());
            g.writeStringField("endpoint", settings.endpoint().map(Object::toString).orElse("AWS " + settings.region()));
            g.writeStringField("target", targetName);
            g.writeNumberField("bytes", size);
            g.writeNumberField("files", files.size());
            g.writeNumberField("repeat", repeat);
            g.writeNumberField("concurrency", settings.concurrency());
            g.writeNumberField("range_bytes", settings.rangeBytes());
            g.writeBooleanField("verified", verified);
            g.writeObjectFieldStart("gb_per_s");
            g.writeNumberField("phoenix", r3(p));
            g.writeNumberField("raw_ranged_get", r3(q));
            g.writeEndObject();
            g.writeObjectFieldStart("measures");
            g.writeStringField("phoenix", "phoenix load (WeightLoader) from " + path + " into " + targetName
                    + ": LIST, header GETs, plan, allocation, ranged GETs into place");
            g.writeStringField("raw_ranged_get", "parallel ranged GETs of every object, whole, into one fresh host buffer"
                    + " (same concurrency and range size; sizes known before the clock)");
            g.writeEndObject();
            g.writeNumberField("phoenix_vs_raw", r3(p / q));
            g.writeObjectFieldStart("runs_gb_per_s");
            g.writeArrayFieldStart("phoenix");
            for (double v : phoenix) {
                g.writeNumber(r3(v));
            }
            g.writeEndArray();
            g.writeArrayFieldStart("raw_ranged_get");
            for (double v : raw) {
                g.writeNumber(r3(v));
            }
            g.writeEndArray();
            g.writeEndObject();
            g.writeNumberField("vmhwm_growth_during_first_load_bytes", hwmAfterLoad - hwmBefore);
            g.writeEndObject();
            g.flush();
            out.println();
        } else {
            out.printf(Locale.ROOT, "%s in %d object%s from %s, target %s, %d GETs in flight of %s, median of %d runs"
                            + " (object bytes per second, destination allocated each run):%n", LoadCommand.human(size),
                    files.size(), files.size() == 1 ? "" : "s", path, targetName, settings.concurrency(),
                    LoadCommand.human(settings.rangeBytes()), repeat);
            out.printf(Locale.ROOT, "  phoenix         phoenix load (WeightLoader) into %-24s %8.3f GB/s  %.2fx raw_ranged_get%n",
                    targetName, p, p / q);
            out.printf(Locale.ROOT, "  raw_ranged_get  parallel ranged GETs into fresh host memory        %8.3f GB/s%n", q);
            out.printf(Locale.ROOT, "  runs: phoenix %s, raw %s; verified %s; peak RSS +%s during the first load%n",
                    Arrays.toString(round(phoenix)), Arrays.toString(round(raw)), verified,
                    LoadCommand.human(Math.max(0, hwmAfterLoad - hwmBefore)));
        }
        out.flush();
        return 0;
    }

    /** Every object's bytes, whole, by the same reader the loader uses: the server's and the client's own rate. */
    private static double raw(Phoenix phx, S3Settings settings, Path path, List<SafetensorsHeader> files, long size)
            throws IOException {
        try (S3FileSystem fs = S3FileSystem.open(settings)) {
            List<Path> objects = new ArrayList<>();
            for (SafetensorsHeader h : files) {
                Path o = fs.path(h.file().toString());
                java.nio.file.Files.size(o); // the size, before the clock
                objects.add(o);
            }
            long t0 = System.nanoTime();
            try (RegisteredBuffer dst = phx.host().allocateHuge(size)) {
                List<S3Reads.Range> ranges = new ArrayList<>();
                long at = 0;
                for (int i = 0; i < files.size(); i++) {
                    long n = files.get(i).fileSize();
                    ranges.add(new S3Reads.Range(objects.get(i), dst, at, 0, n, n, false));
                    at += n;
                }
                S3Reads.read(ranges, null);
            }
            return size / ((System.nanoTime() - t0) / 1e9) / 1e9;
        }
    }

    /** The first and last bytes (up to 4 KiB each) of up to 64 tensors against the objects, read again. */
    private static boolean verify(LoadedModel m) throws IOException {
        List<LoadedTensor> all = new ArrayList<>(m.tensors().values());
        int step = Math.max(1, all.size() / 64);
        for (int i = 0; i < all.size(); i += step) {
            LoadedTensor t = all.get(i);
            long n = Math.min(4096, t.nbytes());
            if (n == 0) {
                continue;
            }
            SafetensorsHeader h = m.model().fileOf(t.name()).orElseThrow();
            try (FileChannel ch = FileChannel.open(t.file(), StandardOpenOption.READ)) {
                for (long off : new long[] {0, t.nbytes() - n}) {
                    byte[] got = new byte[(int) n];
                    t.copyTo(off, MemorySegment.ofArray(got));
                    ByteBuffer want = ByteBuffer.allocate((int) n);
                    long pos = h.fileOffset(t.info()) + off;
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

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static double r3(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    private static double[] round(double[] v) {
        double[] o = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            o[i] = r3(v[i]);
        }
        return o;
    }
}
