package io.phxfs.safetensors;

import io.phxfs.core.BatchResult;
import io.phxfs.core.Device;
import io.phxfs.core.Errno;
import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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
 * <p>All reads of a load are one batch, the same path {@code phoenix bench} measures. With a
 * {@link ProgressListener} the batch is submitted asynchronously and its moved bytes are
 * polled (phxfs_batch_bytes_done) every {@value #PROGRESS_PERIOD_MS} ms.
 */
public final class WeightLoader {
    static final long PROGRESS_PERIOD_MS = 50;

    private final Placement placement;
    private final TensorSelector selector;
    private final Boolean direct;
    private final Boolean mapHost;
    private final boolean writable;
    private final ReadPlan.Options options;
    private final SafetensorsParser parser;
    private final ProgressListener progress;
    private final TensorAllocator allocator;
    private final Map<String, RegisteredBuffer> intoBuffers;

    private WeightLoader(Builder b) {
        this.placement = b.placement;
        this.selector = b.selector;
        this.direct = b.direct;
        this.mapHost = b.mapHost;
        this.writable = b.writable;
        this.options = b.options;
        this.parser = b.parser;
        this.progress = b.progress;
        this.allocator = b.allocator;
        this.intoBuffers = b.intoBuffers;
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

        private Builder() {
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
            return this;
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
     * @throws SafetensorsFormatException when a file or the index is malformed
     * @throws IllegalArgumentException   when the path holds no model or a named tensor is missing
     * @throws PhoenixException           when allocation or a read fails
     * @throws IOException                when a header cannot be read
     * @param path a {@code .safetensors} file, a model directory or an index file
     * @return the loaded model; the caller closes it
     */
    public LoadedModel load(Path path) throws IOException {
        long t0 = System.nanoTime();
        return load(ModelFiles.open(path, parser), t0);
    }

    /**
     * Loads a model whose headers are already parsed.
     *
     * @param model the parsed model
     * @return the loaded model; the caller closes it
     */
    public LoadedModel load(ModelFiles model) {
        return load(model, System.nanoTime());
    }

    /**
     * The plan this loader would execute for {@code model}.
     *
     * @param model the model to plan
     * @return the plan
     */
    public ReadPlan plan(ModelFiles model) {
        return ReadPlan.of(model, selector, placement, options);
    }

    private LoadedModel load(ModelFiles model, long t0) {
        if (allocator != null) {
            return loadInto(model, t0);
        }
        ReadPlan plan = plan(model);
        Phoenix phx = Phoenix.open();
        SortedMap<Integer, RegisteredBuffer> buffers = new TreeMap<>();
        List<AutoCloseable> owned = new ArrayList<>();
        Map<Integer, Device> devices = new HashMap<>();
        Map<Integer, Device> uninitialized = new HashMap<>();
        try {
            for (int target : plan.targets()) {
                if (target != Placement.HOST) {
                    devices.put(target, phx.device(target));
                }
            }
            long tAlloc = System.nanoTime();
            HostMapping mapping = null;
            for (Map.Entry<Integer, Long> e : plan.bufferBytes().entrySet()) {
                int target = e.getKey();
                if (target == Placement.HOST && shouldMap(plan)) {
                    mapping = HostMapping.map(phx, hostFiles(plan));
                    owned.add(mapping);
                    buffers.put(target, mapping.buffer());
                } else if (target == Placement.HOST) {
                    RegisteredBuffer b = phx.host().allocateHuge(e.getValue());
                    owned.add(b);
                    buffers.put(target, b);
                } else if (readsCover(plan, target, e.getValue())) {
                    // every byte is read before anyone sees it (tails past EOF are zeroed after)
                    RegisteredBuffer b = devices.get(target).allocateUninitialized(e.getValue());
                    owned.add(b);
                    buffers.put(target, b);
                    uninitialized.put(target, devices.get(target));
                } else {
                    RegisteredBuffer b = devices.get(target).allocate(e.getValue());
                    owned.add(b);
                    buffers.put(target, b);
                }
            }
            long tRead = System.nanoTime();
            List<Read> reads = new ArrayList<>();
            for (ReadPlan.ReadRequest r : plan.requests()) {
                if (mapping == null || r.target() != Placement.HOST) {
                    reads.add(new Read(r.file(), buffers.get(r.target()), r.bufferOffset(), r.fileOffset(), r.length(),
                            r.neededLength(), uninitialized.get(r.target())));
                }
            }
            // a mapping's bytes are in place once it is made (populated): progress counts them as done
            long mapped = mapping == null ? 0 : plan.tensors().values().stream()
                    .filter(p -> p.target() == Placement.HOST).mapToLong(ReadPlan.PlannedTensor::nbytes).sum();
            // Host tensors of cold files are copied this time; read through the page cache (not
            // O_DIRECT), so that the next load finds the files warm and maps them instead of
            // copying from disk again (O_DIRECT left them cold load after load).
            java.util.Set<SafetensorsHeader> warmUp = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
            if (mapping == null && mapHost == null && direct == null && !writable && plan.targets().contains(Placement.HOST)) {
                warmUp.addAll(hostFiles(plan));
            }
            read(reads, warmUp::contains, mapped);
            long tEnd = System.nanoTime();
            long nanos = tEnd - t0;
            Map<String, LoadedTensor> tensors = new LinkedHashMap<>();
            for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
                long at = mapping != null && p.target() == Placement.HOST ? mapping.offsetOf(p.file(), p.info()) : p.bufferOffset();
                tensors.put(p.name(), new LoadedTensor(p.info(), p.file().file(), p.target(), at,
                        buffers.get(p.target()), devices.get(p.target()), LoadedTensor.Memory.SHARED));
            }
            return new LoadedModel(model, plan, buffers, owned, tensors, nanos, tRead - tAlloc, tEnd - tRead);
        } catch (RuntimeException | Error e) {
            for (AutoCloseable c : owned) {
                try {
                    c.close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** Loads into caller memory: one destination per tensor, from {@link #allocator}. */
    private LoadedModel loadInto(ModelFiles model, long t0) {
        ReadPlan selection = ReadPlan.of(model, selector, Placement.all(Placement.HOST), options);
        if (intoBuffers != null) {
            List<String> unknown = intoBuffers.keySet().stream().filter(n -> model.tensor(n).isEmpty()).sorted().toList();
            if (!unknown.isEmpty()) {
                throw new IllegalArgumentException(model.path() + ": caller buffers for tensors the model does not have: "
                        + unknown.stream().map(Names::quote).toList());
            }
        }
        Phoenix phx = Phoenix.open();
        Map<String, TensorDestination> dests = new HashMap<>();
        List<AutoCloseable> handedOver = new ArrayList<>();
        try {
            long tAlloc = System.nanoTime();
            for (ReadPlan.PlannedTensor p : selection.tensors().values()) {
                if (p.nbytes() == 0) {
                    continue; // nothing to hold
                }
                TensorDestination d = allocator.destinationOf(p.info());
                if (d == null) {
                    throw new IllegalArgumentException("the TensorAllocator gave no destination for " + Names.tensor(p.name()));
                }
                if (d.owned()) {
                    handedOver.add(d.buffer());
                }
                checkFits(p.info(), d);
                dests.put(p.name(), d);
            }
            Placement byBuffer = t -> dests.containsKey(t.name()) ? dests.get(t.name()).buffer().deviceId() : Placement.HOST;
            ReadPlan plan = ReadPlan.of(model, selector, byBuffer, options);
            Map<Integer, Device> devices = new HashMap<>();
            List<Read> reads = new ArrayList<>();
            for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
                TensorDestination d = dests.get(p.name());
                if (d == null) {
                    continue;
                }
                if (!d.buffer().isHost()) {
                    devices.computeIfAbsent(d.buffer().deviceId(), phx::device);
                }
                for (long off = 0; off < p.nbytes(); off += options.maxRequestBytes()) {
                    long len = Math.min(options.maxRequestBytes(), p.nbytes() - off);
                    reads.add(new Read(p.file(), d.buffer(), d.offset() + off, p.fileOffset() + off, len, len, null));
                }
            }
            long tRead = System.nanoTime();
            read(reads, h -> true, 0);
            long tEnd = System.nanoTime();
            Map<String, LoadedTensor> tensors = new LinkedHashMap<>();
            for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
                TensorDestination d = dests.get(p.name());
                tensors.put(p.name(), d == null
                        ? new LoadedTensor(p.info(), p.file().file(), p.target(), 0, null, null, LoadedTensor.Memory.BORROWED)
                        : new LoadedTensor(p.info(), p.file().file(), p.target(), d.offset(), d.buffer(),
                                devices.get(p.target()), d.owned() ? LoadedTensor.Memory.OWNED : LoadedTensor.Memory.BORROWED));
            }
            return new LoadedModel(model, plan, new TreeMap<>(), List.of(), tensors, tEnd - t0, tRead - tAlloc, tEnd - tRead);
        } catch (RuntimeException | Error e) {
            for (AutoCloseable c : handedOver) {
                try {
                    c.close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** A caller's destination must hold the whole tensor and be writable: libphoenix would write past it or fault. */
    private static void checkFits(TensorInfo t, TensorDestination d) {
        RegisteredBuffer b = d.buffer();
        String what = Names.tensor(t.name()) + " (" + t.dtype() + Arrays.toString(t.shape()) + ", "
                + t.nbytes() + " bytes)";
        if (b.isClosed()) {
            throw new IllegalArgumentException(what + ": the caller's " + b + " is closed");
        }
        if (d.offset() > b.size() || t.nbytes() > b.size() - d.offset()) {
            throw new IllegalArgumentException(what + " does not fit the caller's " + b + ": "
                    + Math.max(0, b.size() - d.offset()) + " bytes from offset " + d.offset());
        }
        if (b.segment().map(MemorySegment::isReadOnly).orElse(false)) {
            throw new IllegalArgumentException(what + ": the caller's " + b + " is read-only");
        }
    }

    private PhxFile open(Path file) {
        if (direct != null) {
            return direct ? PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT) : PhxFile.open(file, OpenMode.READ);
        }
        PhxFile f = PhxFile.open(file, OpenMode.READ);
        if (f.cachedFraction() >= 0.5) {
            return f;
        }
        f.close();
        return PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT);
    }

    private static List<SafetensorsHeader> hostFiles(ReadPlan plan) {
        Map<SafetensorsHeader, Boolean> seen = new IdentityHashMap<>();
        for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
            if (p.target() == Placement.HOST) seen.put(p.file(), Boolean.TRUE);
        }
        return new ArrayList<>(seen.keySet());
    }

    private boolean shouldMap(ReadPlan plan) {
        if (writable) {
            return false;
        }
        if (mapHost != null) {
            return mapHost;
        }
        if (Boolean.TRUE.equals(direct)) return false;
        for (SafetensorsHeader h : hostFiles(plan)) {
            try (PhxFile f = PhxFile.open(h.file(), OpenMode.READ)) {
                if (f.cachedFraction() < 0.5) return false;
            }
        }
        return true;
    }

    /** True when the target's requests, laid end to end, fill its buffer from 0 to {@code bytes}. */
    private static boolean readsCover(ReadPlan plan, int target, long bytes) {
        long end = 0;
        List<ReadPlan.ReadRequest> rs = plan.requests().stream().filter(r -> r.target() == target)
                .sorted(Comparator.comparingLong(ReadPlan.ReadRequest::bufferOffset)).toList();
        for (ReadPlan.ReadRequest r : rs) {
            if (r.bufferOffset() != end) return false;
            end += r.length();
        }
        return end == bytes;
    }

    /**
     * One read: {@code length} bytes of {@code file} at {@code fileOffset} into {@code buffer}
     * at {@code bufferOffset}, of which {@code neededLength} must arrive; {@code zeroTail} is
     * the device of an uninitialized buffer whose bytes past the end of the file must be zeroed.
     */
    private record Read(SafetensorsHeader file, RegisteredBuffer buffer, long bufferOffset, long fileOffset,
                        long length, long neededLength, Device zeroTail) {
    }

    /** Zeroes what a read left unwritten in an uninitialized buffer: alignment past end of file. */
    private static void zeroShortTails(List<Read> reads, BatchResult result) {
        for (int i = 0; i < reads.size(); i++) {
            Read r = reads.get(i);
            long got = Math.max(0, result.result(i));
            if (r.zeroTail() == null || got >= r.length()) continue;
            try (Arena arena = Arena.ofConfined()) {
                r.zeroTail().copyToDevice(arena.allocate(r.length() - got), r.buffer(), r.bufferOffset() + got);
            }
        }
    }

    /**
     * Runs {@code reads} as one batch; {@code buffered}: the files to open through the page
     * cache whatever {@link #direct} and their cached fraction say; {@code inPlace}: bytes already in place (mapped), which
     * progress reports as done from the start.
     */
    private void read(List<Read> reads, java.util.function.Predicate<SafetensorsHeader> buffered, long inPlace) {
        long total = inPlace + reads.stream().mapToLong(Read::length).sum();
        if (progress != null) {
            progress.onProgress(inPlace, total);
        }
        if (reads.isEmpty()) {
            return;
        }
        Map<SafetensorsHeader, PhxFile> files = new IdentityHashMap<>();
        try {
            for (Read r : reads) {
                files.computeIfAbsent(r.file(), h -> buffered.test(h) ? PhxFile.open(h.file(), OpenMode.READ) : open(h.file()));
            }
            try (IoBatch batch = batch(reads, files)) {
                BatchResult result = progress == null ? batch.run() : awaitWithProgress(batch, inPlace, total);
                check(reads, result);
                zeroShortTails(reads, result);
                if (progress != null) {
                    progress.onProgress(total, total);
                }
            }
        } finally {
            for (PhxFile f : files.values()) {
                f.close();
            }
        }
    }

    /** Submits the batch and reports its moved bytes until it completes. */
    private BatchResult awaitWithProgress(IoBatch batch, long inPlace, long total) {
        CompletableFuture<BatchResult> f = batch.submitAsync();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get(PROGRESS_PERIOD_MS, TimeUnit.MILLISECONDS);
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

    private static IoBatch batch(List<Read> reads, Map<SafetensorsHeader, PhxFile> files) {
        IoBatch batch = IoBatch.create(reads.size());
        try {
            for (Read r : reads) {
                batch.add(IoRequest.read(files.get(r.file()), r.fileOffset(), r.buffer(), r.bufferOffset(), r.length()));
            }
            return batch;
        } catch (RuntimeException e) {
            batch.close();
            throw e;
        }
    }

    /** Every request must have delivered the bytes its tensors need; more (alignment past EOF) is optional. */
    private static void check(List<Read> reads, BatchResult result) {
        result.throwIfFailed();
        for (int i = 0; i < reads.size(); i++) {
            Read r = reads.get(i);
            if (result.result(i) < r.neededLength()) {
                throw new PhoenixException("read " + r.file().file() + " at offset " + r.fileOffset() + ": got "
                        + result.result(i) + " of " + r.neededLength() + " bytes (did the file shrink while loading?)",
                        Errno.EIO);
            }
        }
    }
}
