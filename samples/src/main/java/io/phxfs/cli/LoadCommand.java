package io.phxfs.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.TensorDigests;
import io.phxfs.safetensors.TensorSelector;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix load PATH [--host | --device N | --devices 0,1 [--spread replicate|split]] [--copy] [--checksums] [--json] [--only REGEX]}:
 * loads safetensors weights with the WeightLoader and reports what arrived. The options and
 * the JSON shape are a contract.
 */
@Command(name = "load", mixinStandardHelpOptions = true,
        description = {"Loads safetensors weights into device or host memory: device 0 unless --device N or --host;"
                        + " host memory where there is no accelerator.",
                "In host memory, tensors of page-cache-warm files are read-only mappings of the files (no copy);"
                        + " --copy gives writable copies instead.",
                "PATH is a .safetensors file, a model directory (model.safetensors or model.safetensors.index.json)"
                        + " or an index file; or s3://BUCKET/PREFIX/ (a model directory in S3-compatible storage:"
                        + " AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE).",
                "Exit status: 0 loaded; 2 invalid input (a malformed file or one of another kind, a path that"
                        + " leads to no file: ENOENT, ENOTDIR, EISDIR, ELOOP); 1 other failures (EACCES, EIO...)."})
final class LoadCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "PATH", converter = ModelPaths.class,
            description = "A .safetensors file, a model directory or an index file, or s3://BUCKET/PREFIX/.")
    Path path;

    @ArgGroup(exclusive = true)
    TargetOptions target = new TargetOptions();

    @Option(names = "--checksums", description = "SHA-256 of every tensor, computed from the loaded memory.")
    boolean checksums;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    @Option(names = "--only", paramLabel = "REGEX", description = "Load only tensors whose name REGEX matches (anywhere in the name).")
    String only;

    @Option(names = "--direct", hidden = true, description = "Always read with O_DIRECT.")
    boolean direct;

    @Option(names = "--buffered", hidden = true, description = "Always read through the page cache.")
    boolean buffered;

    @Option(names = "--parse-first", hidden = true, description = "Parse every header before the first read (benchmarks the overlap).")
    boolean parseFirst;

    @Option(names = "--devices", paramLabel = "IDS", split = ",", description = {
            "Several devices (comma-separated ids, e.g. 0,1): --spread says how the model goes onto them."})
    List<Integer> devices;

    /** Null when not given: 'replicate' with --devices, and an error without them. */
    @Option(names = "--spread", paramLabel = "HOW", description = {
            "With --devices: 'replicate' (default): the whole model on every device, each reading 1/N of the file"
                    + " and receiving the rest from the others by device-to-device copies; 'split': consecutive layers"
                    + " spread over the devices in order (pipeline), embeddings on the first, the final norm and"
                    + " head on the last."})
    String spread;

    @Option(names = "--copy", description = {"Host tensors writable: copy them into private host memory instead of"
            + " mapping the files read-only (slower: every byte is copied into freshly faulted memory).",
            "Device tensors are always copies: --copy with --device or --devices is refused."})
    boolean copy;

    @Spec
    CommandSpec spec;

    private ParserWarmUp startedEarly;

    @Override
    public Integer call() throws IOException {
        checkOptions();
        TensorSelector selector = selector();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        ParserWarmUp warmUp = startedEarly != null ? startedEarly : ParserWarmUp.start(warmUpKind());
        startedEarly = null;
        Device device = null;
        List<Device> several = List.of();
        try {
            Phoenix phx = Phoenix.open();
            if (devices != null) {
                several = resolveDevices(phx);
                device = several.get(0);
            } else {
                device = target.resolve(phx, false);
                if (copy && device != null) {
                    // unstated target, and an accelerator: device 0, where --copy would be ignored
                    throw usage("--copy applies to host loads, and the target is device " + device.id()
                            + " (the default where there is an accelerator): add --host for writable host tensors");
                }
            }
        } finally {
            // also when the target is wrong: its temporary model must be gone
            warmUp.close(device != null || !several.isEmpty());
        }

        // Everything onto one device, or into host memory: the loader parses the headers itself,
        // while the reads of the data sections (or the mapping of the files) already run.
        boolean parseInLoad = !parseFirst && only == null && devices == null;
        target.announce(err);
        WeightLoader.Builder b = WeightLoader.builder().select(selector);
        if (direct || buffered) {
            b.direct(direct);
        } // else per file: O_DIRECT when it is not in the page cache
        if (copy) {
            b.writable(true);
        }
        if (devices != null && spread.equals("split")) {
            b.split(devices.stream().mapToInt(Integer::intValue).toArray());
        } else if (devices != null) {
            b.replicate(devices);
        } else if (device == null) {
            b.toHost();
        } else {
            b.toDevice(device);
        }
        ModelFiles model = null;
        double parseSeconds = 0;
        LoadedModel m;
        long t0;
        // the bar (a thread of its own) and the loader are made before the clock starts, as
        // the device is opened before it: "seconds" is the load
        try (ProgressBar bar = new ProgressBar(err, "loading", 1000)) {
            WeightLoader loader = b.progress(bar).build();
            t0 = System.nanoTime();
            if (!parseInLoad) {
                model = ModelFiles.open(path);
                parseSeconds = (System.nanoTime() - t0) / 1e9;
                if (only != null && model.names().stream().noneMatch(selector::test)) {
                    throw new IllegalArgumentException(path + ": --only " + only + " matches none of its "
                            + model.names().size() + " tensors");
                }
            }
            m = parseInLoad ? loader.load(path) : loader.load(model);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        if (parseInLoad) {
            model = m.model();
            parseSeconds = m.parseSeconds();
        }
        try (m) {
            Map<String, String> sha = checksums ? TensorDigests.sha256(m) : Map.of();
            String mode = device == null ? "host" : device.mode().name().toLowerCase(Locale.ROOT);
            if (json) {
                // the command's own share: the progress bar's close, and (parsed here first) the
                // parse, which parse_seconds then reports
                double cliSeconds = seconds - m.seconds() - (parseInLoad ? 0 : parseSeconds);
                writeJson(out, model, m, mode, device, seconds, cliSeconds, parseSeconds, sha, several, spread, checksums);
            } else {
                String into = several.isEmpty() ? (device == null ? "host memory" : "device " + device.id())
                        : "devices " + several.stream().map(d -> String.valueOf(d.id())).collect(java.util.stream.Collectors.joining(","))
                                + (spread.equals("split") ? ", layers split over them" : ", replicated");
                writeText(out, model, m, mode, into, seconds, sha);
                for (Device d : several) {
                    Map<String, LoadedTensor> on = m.tensorsOn(d.id());
                    out.printf(Locale.ROOT, "  device %d: %d tensors, %d bytes%s%n", d.id(), on.size(),
                            on.values().stream().mapToLong(LoadedTensor::nbytes).sum(),
                            checksums ? ", sha256 of its tensors' digests " + deviceDigest(on) : "");
                }
            }
        }
        out.flush();
        return 0;
    }

    /**
     * The warm-up {@link PhoenixCli} started from the raw command line, before picocli built the
     * CLI's model; this command waits for it, or starts its own when there is none.
     */
    void adoptWarmUp(ParserWarmUp w) {
        startedEarly = w;
    }

    /** The warm-up's kind from the parsed options ({@link ParserWarmUp#kindOf} reads the raw ones). */
    private ParserWarmUp.Kind warmUpKind() {
        boolean toDevice = devices != null || target.device != null;
        if (!toDevice && (target.host || copy || !ParserWarmUp.acceleratorNode())) {
            return copy || direct || buffered ? ParserWarmUp.Kind.HOST_COPY : ParserWarmUp.Kind.HOST_MAPPED;
        }
        return ParserWarmUp.Kind.DEVICE;
    }

    /**
     * Options that contradict each other, refused as picocli refuses its own usage errors (the
     * message, then the usage, exit status 2) before anything is opened: an option that would
     * be silently ignored is a user's mistake left unsaid.
     */
    private void checkOptions() {
        if (devices != null && (target.host || target.device != null)) {
            throw usage("--devices and " + (target.host ? "--host" : "--device=N") + " are mutually exclusive (specify"
                    + " only one)");
        }
        if (copy && (target.device != null || devices != null)) {
            throw usage("--copy and " + (devices != null ? "--devices" : "--device=N") + " are mutually exclusive:"
                    + " --copy makes host tensors writable, and device tensors are always writable copies");
        }
        if (spread != null && devices == null) {
            throw usage("--spread needs --devices (it says how a model goes onto several devices)");
        }
        if (spread == null) {
            spread = "replicate";
        } else if (!spread.equals("replicate") && !spread.equals("split")) {
            throw usage("Invalid value for option '--spread': expected one of [replicate, split] but was '" + spread
                    + "'");
        }
        if (direct && buffered) {
            throw usage("--direct and --buffered are mutually exclusive (specify only one)");
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), "Error: " + message);
    }

    private TensorSelector selector() {
        if (only == null) {
            return TensorSelector.all();
        }
        try {
            return TensorSelector.regex(Pattern.compile(only));
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("--only: invalid regular expression '" + only + "': "
                    + e.getDescription() + (e.getIndex() >= 0 ? " near index " + e.getIndex() : ""));
        }
    }


    /** The devices of --devices, opened; ids checked against the devices there are. */
    private List<Device> resolveDevices(Phoenix phx) {
        int n = phx.deviceCount();
        if (devices.isEmpty() || devices.stream().distinct().count() != devices.size()) {
            throw new IllegalArgumentException("--devices " + devices + ": give each device id once");
        }
        List<Device> out = new java.util.ArrayList<>();
        for (int id : devices) {
            if (id < 0 || id >= n) {
                throw new IllegalArgumentException("--devices: device " + id + " does not exist: there "
                        + (n == 1 ? "is 1 device" : "are " + n + " devices") + " (0.." + (n - 1) + ")");
            }
            out.add(phx.device(id));
        }
        return out;
    }

    /** SHA-256 over the device's tensors' SHA-256s in name order: equal devices, equal digests. */
    static String deviceDigest(Map<String, LoadedTensor> tensors) {
        try {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            for (LoadedTensor t : new TreeMap<>(tensors).values()) {
                md.update(t.name().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                md.update((byte) 0);
                md.update(TensorDigests.sha256(t).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            }
            return java.util.HexFormat.of().formatHex(md.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void writeJson(PrintWriter out, ModelFiles model, LoadedModel m, String mode, Device device,
                                  double seconds, double cliSeconds, double parseSeconds, Map<String, String> sha,
                                  List<Device> several,
                                  String spread, boolean checksums) throws IOException {
        JsonGenerator g = new JsonFactory().createGenerator(out);
        g.useDefaultPrettyPrinter();
        g.writeStartObject();
        g.writeStringField("mode", mode);
        g.writeNumberField("device", device == null ? -1 : device.id());
        // host tensors of a mapping are read-only; copies (and device memory) are writable
        g.writeBooleanField("writable", !m.hostMapped());
        g.writeNumberField("files", m.fileCount());
        g.writeNumberField("bytes", m.bytes());
        g.writeNumberField("seconds", round(seconds, 6));
        g.writeNumberField("gb_per_s", round(m.bytes() / seconds / 1e9, 6));
        // the phases tile "seconds": cli + locate + parse + plan + allocate + read + view + other,
        // except that with reads_overlap_parse the parse, plan and view run within read
        g.writeNumberField("cli_seconds", round(cliSeconds, 6));
        g.writeBooleanField("reads_overlap_parse", m.readsOverlapParse());
        g.writeNumberField("locate_seconds", round(m.locateSeconds(), 6));
        g.writeNumberField("parse_seconds", round(parseSeconds, 6));
        g.writeNumberField("plan_seconds", round(m.planSeconds(), 6));
        g.writeNumberField("allocate_seconds", round(m.allocateSeconds(), 6));
        g.writeNumberField("read_seconds", round(m.readSeconds(), 6));
        g.writeNumberField("view_seconds", round(m.viewSeconds(), 6));
        g.writeNumberField("other_seconds", round(m.otherSeconds(), 6));
        if (m.allocateSplit().isPresent()) {
            // allocate_seconds taken apart: the first four tile it; allocation_seconds ran on its own
            // thread beside the opens
            LoadedModel.AllocateSplit a = m.allocateSplit().get();
            g.writeObjectFieldStart("allocate_split");
            g.writeNumberField("extents_seconds", round(a.extentsSeconds(), 6));
            g.writeNumberField("opens_seconds", round(a.opensSeconds(), 6));
            g.writeNumberField("allocation_wait_seconds", round(a.allocationWaitSeconds(), 6));
            g.writeNumberField("other_seconds", round(a.otherSeconds(), 6));
            g.writeNumberField("allocation_seconds", round(a.allocationSeconds(), 6));
            g.writeEndObject();
        }
        if (!Double.isNaN(m.readTransferSeconds())) {
            // read_seconds taken apart at libphoenix's own times for the batch (they tile it)
            g.writeObjectFieldStart("read_split");
            g.writeNumberField("submit_seconds", round(m.readSubmitSeconds(), 6));
            g.writeNumberField("start_seconds", round(m.readStartSeconds(), 6));
            g.writeNumberField("transfer_seconds", round(m.readTransferSeconds(), 6));
            g.writeNumberField("complete_seconds", round(m.readCompleteSeconds(), 6));
            g.writeEndObject();
        }
        if (!several.isEmpty()) {
            g.writeStringField("spread", spread);
            g.writeArrayFieldStart("devices");
            for (Device d : several) {
                Map<String, LoadedTensor> on = m.tensorsOn(d.id());
                g.writeStartObject();
                g.writeNumberField("device", d.id());
                g.writeNumberField("tensors", on.size());
                g.writeNumberField("bytes", on.values().stream().mapToLong(LoadedTensor::nbytes).sum());
                if (checksums) {
                    g.writeStringField("sha256", deviceDigest(on));
                }
                g.writeEndObject();
            }
            g.writeEndArray();
        }
        g.writeObjectFieldStart("tensors");
        Function<Path, String> fileName = fileNames(model);
        for (LoadedTensor t : new TreeMap<>(m.tensors()).values()) {
            g.writeObjectFieldStart(t.name());
            g.writeStringField("dtype", t.dtype().headerName());
            g.writeArrayFieldStart("shape");
            for (long d : t.shape()) {
                g.writeNumber(d);
            }
            g.writeEndArray();
            g.writeStringField("file", fileName.apply(t.file()));
            g.writeNumberField("nbytes", t.nbytes());
            if (sha.containsKey(t.name())) {
                g.writeStringField("sha256", sha.get(t.name()));
            }
            g.writeEndObject();
        }
        g.writeEndObject();
        g.writeEndObject();
        g.flush();
        out.println();
    }

    /**
     * Each file's name relative to the model, worked out once a file: a listing of 95,787 tensors
     * in 160 shards made a relative path per tensor, 75 MB of garbage after the load.
     */
    private static Function<Path, String> fileNames(ModelFiles model) {
        Map<Path, String> names = new HashMap<>();
        return file -> names.computeIfAbsent(file, model::relativeName);
    }

    private static void writeText(PrintWriter out, ModelFiles model, LoadedModel m, String mode, String into,
                                  double seconds, Map<String, String> sha) {
        out.printf(Locale.ROOT, "loaded %d tensor%s, %s (%d bytes) from %d file(s) into %s (mode %s%s) in %.3f s: %.2f GB/s%n",
                m.tensors().size(), m.tensors().size() == 1 ? "" : "s", human(m.bytes()), m.bytes(), m.fileCount(),
                into, mode,
                m.hostMapped() ? ", mapped read-only; --copy for writable tensors" : "", seconds, m.bytes() / seconds / 1e9);
        Function<Path, String> fileName = fileNames(model);
        for (LoadedTensor t : new TreeMap<>(m.tensors()).values()) {
            out.printf(Locale.ROOT, "  %-50s %-8s %-20s %12d  %s%s%n", shown(t.name()), t.dtype().headerName(),
                    Arrays.toString(t.shape()), t.nbytes(), shown(fileName.apply(t.file())),
                    sha.containsKey(t.name()) ? "  " + sha.get(t.name()) : "");
        }
    }

    /**
     * A name taken from a file, as one row of the listing shows it: control characters and
     * invisible format characters (bidirectional overrides, a byte order mark) as
     * {@code \\uXXXX}, as the loader's messages show them. Header names are any JSON string: a
     * newline in one must not start a row of its own, nor an escape sequence reach the terminal.
     */
    static String shown(String name) {
        StringBuilder b = null;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029' || Character.getType(c) == Character.FORMAT) {
                if (b == null) {
                    b = new StringBuilder(name.length() + 16).append(name, 0, i);
                }
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else if (b != null) {
                b.append(c);
            }
        }
        return b == null ? name : b.toString();
    }

    static String human(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.2f MiB", bytes / (double) (1L << 20));
        }
        if (bytes >= 1L << 10) {
            return String.format(Locale.ROOT, "%.2f KiB", bytes / 1024.0);
        }
        return bytes + " B";
    }

    static double round(double v, int digits) {
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }
}
