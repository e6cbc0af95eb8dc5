package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.HostMemoryPool;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.s3.S3Reads;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Loads safetensors weights into host or device memory through libphoenix: a {@link ReadPlan}
 * over all files, one buffer per target, and the reads of every file in one batch, so that the
 * worker pool overlaps files.
 *
 * <pre>{@code
 * WeightLoader loader = WeightLoader.builder().toDevice(Phoenix.open().device(0)).build();
 * try (LoadedModel m = loader.load(Path.of("/models/llama"))) {
 *     long ptr = m.tensor("model.norm.weight").orElseThrow().address();
 * }
 * }</pre>
 *
 * <p>All reads of a load are one batch, the same path {@code phoenix bench} measures. It is
 * submitted asynchronously; the loading thread polls its moved bytes (phxfs_batch_bytes_done)
 * at least every {@value #PROGRESS_PERIOD_MS} ms, reports them to a {@link ProgressListener}
 * when there is one, and spins over the last stretch (BatchWait).
 */
public final class WeightLoader {
    static final long PROGRESS_PERIOD_MS = 50;

    private final Placement placement;
    private final TensorSelector selector;
    private final Boolean direct;
    private final Boolean mapHost;
    private final boolean writable;
    final ReadPlan.Options options;
    final SafetensorsParser parser;
    private final Spread spread;
    private final List<Integer> devices;
    private final Placement splitOverride;
    final HostMemoryPool hostPool;
    /** How every load's reads run. */
    final ReadRunner runner;
    /** Loads a placement (and gives the early reads their host memory). */
    final PlacedLoad placed;
    /** Loads into caller memory; null unless {@link Builder#into} was the last choice of targets. */
    private final CallerMemoryLoad intoCaller;
    /** Loads a copy onto each device; null unless {@link Builder#replicate}. */
    private final ReplicatedLoad replicated;

    /** How a load uses several devices: one placement, a whole copy on each, or layers spread. */
    private enum Spread { PLACEMENT, REPLICATE, SPLIT }

    private WeightLoader(Builder b) {
        this.placement = b.placement;
        this.selector = b.selector;
        this.direct = b.direct;
        this.mapHost = b.mapHost;
        this.writable = b.writable;
        this.options = b.options;
        this.parser = b.parser;
        this.spread = b.spread;
        this.devices = b.devices;
        this.splitOverride = b.splitOverride;
        this.hostPool = b.hostPool;
        this.runner = new ReadRunner(b.direct, b.progress);
        this.placed = new PlacedLoad(b.direct, b.mapHost, b.writable, b.hostPool, runner);
        this.intoCaller = b.allocator == null ? null
                : new CallerMemoryLoad(b.allocator, b.intoBuffers, b.selector, b.options, runner);
        this.replicated = b.spread == Spread.REPLICATE ? new ReplicatedLoad(b.devices, runner) : null;
    }

    /**
     * A builder with the defaults: every tensor into host memory.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Options of a loader; by default everything into host memory, buffered reads. */
    public static final class Builder {
        private Placement placement = Placement.all(Placement.HOST);
        private TensorSelector selector = TensorSelector.all();
        private Boolean direct;
        private Boolean mapHost;
        private boolean writable;
        private ReadPlan.Options options = ReadPlan.Options.defaults();
        private SafetensorsParser parser = SafetensorsParser.standard();
        private ProgressListener progress;
        private TensorAllocator allocator;
        private Map<String, RegisteredBuffer> intoBuffers;
        private Spread spread = Spread.PLACEMENT;
        private List<Integer> devices = List.of();
        private Placement splitOverride;
        private HostMemoryPool hostPool;

        private Builder() {
        }

        /**
         * Host memory for copied host tensors from {@code pool} instead of fresh memory: a
         * process that loads more than once then copies into memory already faulted in (fresh
         * anonymous memory is faulted in and zeroed page by page as the copy first writes it,
         * which on a small machine costs more than the copy). The caller owns the pool; each
         * model's buffer goes back to it when the model closes. Mappings are unaffected.
         *
         * @param pool the pool, or null for fresh memory (the default)
         * @return this builder
         */
        public Builder hostMemory(HostMemoryPool pool) {
            this.hostPool = pool;
            return this;
        }

        /**
         * Everything into host memory.
         *
         * @return this builder
         */
        public Builder toHost() {
            return placement(Placement.all(Placement.HOST));
        }

        /**
         * Everything into memory of {@code device}.
         *
         * @param device the device to load into
         * @return this builder
         */
        public Builder toDevice(Device device) {
            return toDevice(device.id());
        }

        /**
         * Everything into memory of the device with this id.
         *
         * @param deviceId the device id, {@code >= 0}
         * @return this builder
         * @throws IllegalArgumentException for a negative id; host memory is {@link #toHost()}
         */
        public Builder toDevice(int deviceId) {
            if (deviceId < 0) {
                throw new IllegalArgumentException("device id must be >= 0 (use toHost()), was " + deviceId);
            }
            return placement(Placement.all(deviceId));
        }

        /**
         * A target per tensor, e.g. layers split over devices. Replaces an earlier {@code into}.
         *
         * @param placement the target of each tensor
         * @return this builder
         */
        public Builder placement(Placement placement) {
            this.placement = Objects.requireNonNull(placement);
            this.allocator = null;
            this.intoBuffers = null;
            this.spread = Spread.PLACEMENT;
            return this;
        }

        /**
         * The whole model on each of {@code devices}: each device reads about 1/N of the bytes
         * from the files (through its own link), and the rest reaches it by device-to-device
         * copies from the others: directly where the devices allow peer access, through the
         * source device's pinned pool otherwise ({@link Device#copyFromDevice}). Each device
         * gets the same layout; {@link LoadedModel#tensors()} are the first device's tensors,
         * {@link LoadedModel#tensorsOn(int)} any device's. Progress reports the file reads.
         * Replaces an earlier placement or {@code into}.
         *
         * @param devices distinct device ids, at least one
         * @return this builder
         */
        public Builder replicate(List<Integer> devices) {
            this.devices = checkDevices(devices);
            this.spread = Spread.REPLICATE;
            this.allocator = null;
            this.intoBuffers = null;
            return this;
        }

        /**
         * {@link #replicate(List)} over these device ids.
         *
         * @param devices distinct device ids, at least one
         * @return this builder
         */
        public Builder replicate(int... devices) {
            return replicate(Arrays.stream(devices).boxed().toList());
        }

        /**
         * Pipeline placement: consecutive layers spread over {@code devices} in runs of about
         * equal bytes, each device reading only its own tensors. A tensor's layer is the number
         * after {@code layers.}, {@code layer.}, {@code h.}, {@code blocks.} or {@code block.}
         * in its name; a tensor of no layer goes to the first device when its name contains
         * {@code embed}, {@code wte} or {@code wpe} (the input side), to the last device
         * otherwise (final norm, {@code lm_head}). Replaces an earlier placement or {@code into}.
         *
         * @param devices distinct device ids in pipeline order, at least one
         * @return this builder
         */
        public Builder split(int... devices) {
            return split(Arrays.stream(devices).boxed().toList(), null);
        }

        /**
         * {@link #split(int...)}, where {@code placement} decides first: the tensors it gives
         * a target (a device id, or {@link Placement#HOST}) go there, those it answers
         * {@link Placement#BY_LAYER} for follow the layer rule.
         *
         * @param devices distinct device ids in pipeline order, at least one
         * @param placement the caller's placement, or null to leave every tensor to the rule
         * @return this builder
         */
        public Builder split(List<Integer> devices, Placement placement) {
            this.devices = checkDevices(devices);
            this.splitOverride = placement;
            this.spread = Spread.SPLIT;
            this.allocator = null;
            this.intoBuffers = null;
            return this;
        }

        private static List<Integer> checkDevices(List<Integer> devices) {
            if (devices.isEmpty()) {
                throw new IllegalArgumentException("devices: at least one device id is needed");
            }
            if (devices.stream().anyMatch(d -> d == null || d < 0)) {
                throw new IllegalArgumentException("devices: ids must be >= 0 (host memory is toHost()), were " + devices);
            }
            if (new java.util.HashSet<>(devices).size() != devices.size()) {
                throw new IllegalArgumentException("devices: each id once, were " + devices);
            }
            return List.copyOf(devices);
        }

        /**
         * Every selected tensor into the caller's buffer of its name, from offset 0, instead of
         * buffers the loader allocates; the caller keeps the buffers and frees them after the
         * model is closed. A selected tensor without a buffer, a name the model does not have,
         * or a buffer smaller than its tensor fails the load, naming tensor and sizes.
         * Replaces {@link #placement}; see {@link #into(TensorAllocator)}.
         *
         * @param buffers the buffer of each tensor, by name
         * @return this builder
         */
        public Builder into(Map<String, RegisteredBuffer> buffers) {
            this.intoBuffers = Map.copyOf(buffers);
            this.allocator = TensorAllocator.of(intoBuffers);
            this.spread = Spread.PLACEMENT;
            return this;
        }

        /**
         * Every selected tensor into the memory {@code allocator} gives for it, so that a
         * framework allocates each tensor itself and the loader reads straight into it. The
         * tensor's target is its buffer's device. Reads into caller memory go through the page
         * cache whatever {@link #direct} says: tensors start at arbitrary file offsets and
         * O_DIRECT needs aligned ones. Replaces {@link #placement}; {@link #mapHost} does not
         * apply. Owned destinations of a failed load are closed; borrowed ones are left alone.
         *
         * @param allocator the source of each tensor's memory
         * @return this builder
         */
        public Builder into(TensorAllocator allocator) {
            this.allocator = Objects.requireNonNull(allocator);
            this.intoBuffers = null;
            this.spread = Spread.PLACEMENT;
            return this;
        }

        /**
         * Which tensors to load; all by default.
         *
         * @param selector the selector
         * @return this builder
         */
        public Builder select(TensorSelector selector) {
            this.selector = Objects.requireNonNull(selector);
            return this;
        }

        /**
         * true: open files with O_DIRECT (libphoenix falls back to buffered reads where the
         * file system refuses); false: through the page cache. Default: per file, O_DIRECT
         * when less than half of it is in the page cache (cold files reach the disk's direct
         * rate; warm ones are served from memory), except files whose host-placed tensors
         * would have been mapped had they been warm: those are read through the page cache,
         * so that the next load maps them instead of copying from disk again.
         *
         * @param direct whether to open the files with O_DIRECT
         * @return this builder
         */
        public Builder direct(boolean direct) {
            this.direct = direct;
            return this;
        }

        /**
         * true: host-placed tensors become read-only views of the files mapped into memory
         * (no copy, see {@link HostMapping}); false: they are read into anonymous host memory.
         * Default: map when every file with host-placed tensors is mostly in the page cache
         * and O_DIRECT was not asked for, copy otherwise.
         *
         * @param map whether to map host-placed tensors
         * @return this builder
         */
        public Builder mapHost(boolean map) {
            this.mapHost = map;
            return this;
        }

        /**
         * Whether host-placed tensors must be writable. false (the default): a load of
         * page-cache-warm files may map them ({@link #mapHost}), and the tensors are then
         * read-only views of the page cache: no bytes are copied, and writing through
         * {@link LoadedTensor#segment()} throws. true: they are always copied into private,
         * writable host memory, as tensors in device memory always are, at the cost of the
         * copy (and of faulting in fresh memory). {@link LoadedModel#hostMapped()} tells which
         * a load did. Excludes {@code mapHost(true)}.
         *
         * @param writable whether host-placed tensors must be writable
         * @return this builder
         */
        public Builder writable(boolean writable) {
            this.writable = writable;
            return this;
        }

        /**
         * The options of the read plan; {@link ReadPlan.Options#defaults()} by default.
         *
         * @param options the options
         * @return this builder
         */
        public Builder planOptions(ReadPlan.Options options) {
            this.options = Objects.requireNonNull(options);
            return this;
        }

        /**
         * The parser of the files' headers; {@link SafetensorsParser#standard()} by default.
         *
         * @param parser the parser
         * @return this builder
         */
        public Builder parser(SafetensorsParser parser) {
            this.parser = Objects.requireNonNull(parser);
            return this;
        }

        /**
         * A listener told of the load's progress; none by default.
         *
         * @param progress the listener, or null for none
         * @return this builder
         */
        public Builder progress(ProgressListener progress) {
            this.progress = progress;
            return this;
        }

        /**
         * A loader with these options.
         *
         * @return the loader
         * @throws IllegalStateException when both {@code writable(true)} and {@code mapHost(true)} were asked for
         */
        public WeightLoader build() {
            if (writable && Boolean.TRUE.equals(mapHost)) {
                throw new IllegalStateException("writable(true) and mapHost(true) exclude each other: a mapping is read-only");
            }
            return new WeightLoader(this);
        }
    }

    /**
     * Loads a {@code .safetensors} file, a model directory or an index file.
     *
     * <p>When every tensor goes to one device (or is copied into host memory), the reads of
     * the data sections start before the headers are parsed: their extent follows from each
     * file's header length and size, and the format demands that the tensors tile them. The
     * parse and the plan then run while the bytes move; a header that turns out malformed
     * still fails the load (after the reads end, their buffer freed).
     *
     * @throws SafetensorsFormatException when a file or the index is malformed
     * @throws IllegalArgumentException   when the path holds no model or a named tensor is missing
     * @throws PhoenixException           when allocation or a read fails
     * @throws IOException                when a header cannot be read
     * @param path a {@code .safetensors} file, a model directory or an index file
     * @return the loaded model; the caller closes it
     */
    public LoadedModel load(Path path) throws IOException {
        long t0 = System.nanoTime();
        ModelFiles.Located located = ModelFiles.locate(path, parser);
        long locateNanos = System.nanoTime() - t0;
        // s3://: no early reads (they open files through libphoenix); the shards' headers fetched at once
        boolean objects = S3Reads.any(located.files());
        if (objects) {
            S3Reads.prefetchHeaders(located.files());
        }
        EarlyReads early = objects ? null : EarlyReads.start(this, located);
        // mapped into host memory: the files are mapped (and their page tables populated) meanwhile
        EarlyMapping earlyMap = early == null && !objects && mapsEarly()
                ? EarlyMapping.start(located.files(), Boolean.TRUE.equals(mapHost)) : null;
        long tParse = System.nanoTime();
        ModelFiles model;
        try {
            model = ModelFiles.parse(located, parser);
        } catch (IOException | RuntimeException | Error e) {
            if (early != null) {
                early.abandon(e);
            }
            if (earlyMap != null) {
                earlyMap.abandon(e);
            }
            throw e;
        }
        return load(model, t0, locateNanos, System.nanoTime() - tParse, early, earlyMap);
    }

    /**
     * {@link #load(Path)} of a URI: {@code s3://bucket/prefix/} (a model directory in a bucket,
     * read by the endpoint, region and credentials of {@link io.phxfs.safetensors.s3.S3Settings#fromEnvironment()}),
     * {@code file:} or any scheme java.nio.file knows.
     *
     * @throws IOException                when an object, a file or a header cannot be read; an
     *                                    {@link io.phxfs.safetensors.s3.S3Exception} names the URL,
     *                                    the HTTP status and S3's error code
     * @throws java.io.UncheckedIOException when a tensor range cannot be read from S3 after its
     *                                    retries (the S3Exception is its cause); nothing stays allocated
     * @param uri the model's URI
     * @return the loaded model; the caller closes it
     */
    public LoadedModel load(java.net.URI uri) throws IOException {
        return load("s3".equalsIgnoreCase(uri.getScheme()) ? io.phxfs.safetensors.s3.S3FileSystemProvider.pathOf(
                "s3://" + (uri.getAuthority() == null ? "" : uri.getAuthority()) + uri.getPath()) : Path.of(uri));
    }

    /**
     * Loads a model whose headers are already parsed.
     *
     * @param model the parsed model
     * @return the loaded model; the caller closes it
     */
    public LoadedModel load(ModelFiles model) {
        return load(model, System.nanoTime(), 0, 0, null, null);
    }

    /**
     * The plan this loader would execute for {@code model}; with {@link Builder#replicate},
     * the plan of each device.
     *
     * @param model the model to plan
     * @return the plan
     */
    public ReadPlan plan(ModelFiles model) {
        Placement p = switch (spread) {
            case PLACEMENT -> placement;
            case REPLICATE -> Placement.all(devices.get(0));
            case SPLIT -> LayerSplit.of(model, selector, devices, splitOverride);
        };
        return ReadPlan.of(model, selector, p, options);
    }

    /** The one target of a load whose reads may start before the parse, or null. */
    Integer earlyTarget() {
        if (intoCaller != null || spread != Spread.PLACEMENT || selector != AllTensors.INSTANCE
                || !(placement instanceof SingleTarget single)) {
            return null;
        }
        // host tensors of warm files are mapped, not read, unless a copy is asked for
        boolean hostCopy = writable || Boolean.FALSE.equals(mapHost);
        return single.target() >= 0 || hostCopy ? single.target() : null;
    }

    /**
     * True when a load maps every tensor's file into host memory unless a file is cold: the
     * mapping can then start before the parse ({@link EarlyMapping}).
     */
    private boolean mapsEarly() {
        return intoCaller == null && spread == Spread.PLACEMENT && selector == AllTensors.INSTANCE
                && placement instanceof SingleTarget single && single.target() == Placement.HOST
                && !writable && !Boolean.FALSE.equals(mapHost) && !Boolean.TRUE.equals(direct);
    }

    /**
     * {@code t0}: when the load began; {@code locateNanos}: finding its files and reading the
     * index; {@code parseNanos}: the headers' parse (overlapping the early reads or mapping, if
     * any); {@code earlyMap}: the files' host mapping, under way since before the parse, or null.
     */
    private LoadedModel load(ModelFiles model, long t0, long locateNanos, long parseNanos, EarlyReads early,
                             EarlyMapping earlyMap) {
        if (intoCaller != null) {
            return intoCaller.load(model, t0, locateNanos);
        }
        long tPlan = System.nanoTime();
        ReadPlan plan;
        try {
            plan = plan(model);
        } catch (RuntimeException | Error e) {
            if (early != null) {
                early.abandon(e);
            }
            if (earlyMap != null) {
                earlyMap.abandon(e);
            }
            throw e;
        }
        long planNanos = System.nanoTime() - tPlan;
        if (replicated != null) {
            return replicated.load(model, plan, t0, locateNanos, planNanos);
        }
        if (early != null) {
            if (early.matches(plan)) {
                return early.finish(model, plan, t0, locateNanos, parseNanos, planNanos);
            }
            // cannot happen for a file that passed validation, unless it changed in between
            early.abandon(null);
        }
        return placed.load(model, plan, t0, locateNanos, tPlan, planNanos, earlyMap);
    }
}
