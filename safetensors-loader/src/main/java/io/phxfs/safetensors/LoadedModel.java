package io.phxfs.safetensors;

import io.phxfs.core.RegisteredBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;

/**
 * Tensors loaded by {@link WeightLoader}: one buffer per target, which this object owns and
 * frees on {@link #close()}, and the tensors as views into those buffers; or, when the
 * caller provided the memory ({@link WeightLoader.Builder#into(TensorAllocator)}), no buffers
 * of its own and tensors in caller memory.
 *
 * <p>Every resource has one owner: the buffers per target belong to this model; a caller's
 * {@link TensorDestination#borrowed borrowed} memory stays the caller's; an
 * {@link TensorDestination#owned owned} destination belongs to its tensor, and
 * {@link #release} frees it early.
 */
public final class LoadedModel implements AutoCloseable {
    private final ModelFiles model;
    private final ReadPlan plan;
    private final SortedMap<Integer, RegisteredBuffer> buffers;
    /** What frees the buffers' memory: device buffers themselves, host memory mappings. */
    private final List<AutoCloseable> owned;
    /** The names {@link #release} let go of; {@link #tensors} is {@link #all} without them. */
    private final java.util.Set<String> released = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** A live view: every tensor loaded, less those released. */
    private final Map<String, LoadedTensor> tensors = new Live();
    /** Every tensor, released or not, in model order: close lets go of what each still holds. */
    private final Map<String, LoadedTensor> all;
    private final long nanos;
    private final Phases phases;

    /**
     * Where a load's time went, in nanoseconds: {@code locate} (finding the files, reading the
     * index), {@code parse} (headers, when the load parsed them), {@code plan}, {@code allocate}
     * (everything between the plan and the first read: the destination buffers, the devices),
     * {@code read} (from the first request submitted to the last completed) and {@code views}
     * (the tensor map). With {@code overlapped}, the reads started before the parse: then
     * parse, plan and views ran during the read and only locate, allocate and read follow one
     * another.
     */
    record Phases(long locate, long parse, long plan, long allocate, long read, long views, boolean overlapped,
                  ReadSplit split, AllocateSplit allocateSplit) {
        Phases(long locate, long parse, long plan, long allocate, long read, long views, boolean overlapped) {
            this(locate, parse, plan, allocate, read, views, overlapped, null, null);
        }

        /** These phases with the read told apart, when the batch's times are known. */
        Phases withSplit(ReadSplit s) {
            return new Phases(locate, parse, plan, allocate, read, views, overlapped, s, allocateSplit);
        }

        /** These phases with the allocate phase told apart. */
        Phases withAllocateSplit(AllocateSplit a) {
            return new Phases(locate, parse, plan, allocate, read, views, overlapped, split, a);
        }

        /**
         * The phases of a load whose steps follow one another, from their boundaries: the
         * parse is whatever ran between the locate and the plan, so that the phases tile
         * {@code [t0, tEnd)}.
         */
        static Phases sequential(long t0, long locate, long tPlan, long planNanos, long tRead, long tViews, long tEnd) {
            return new Phases(locate, tPlan - t0 - locate, planNanos, tRead - tPlan - planNanos, tViews - tRead, tEnd - tViews,
                    false);
        }

        /**
         * {@link #sequential}'s phases for a mapped load whose views were made while its pages
         * came in ({@link EarlyMapping}): the read is {@code [tRead, tViews)} and
         * {@code [tViewsEnd, tEnd)}, the views {@code [tViews, tViewsEnd)}; they still tile
         * {@code [t0, tEnd)}.
         */
        static Phases viewsDuringRead(long t0, long locate, long tPlan, long planNanos, long tRead, long tViews,
                                      long tViewsEnd, long tEnd) {
            return new Phases(locate, tPlan - t0 - locate, planNanos, tRead - tPlan - planNanos,
                    (tViews - tRead) + (tEnd - tViewsEnd), tViewsEnd - tViews, false);
        }

        /** The phases that follow one another, summed. */
        long critical() {
            return overlapped ? locate + allocate + read : locate + parse + plan + allocate + read + views;
        }
    }

    /**
     * The read phase taken apart at libphoenix's own times for its batch (nanoseconds; they
     * tile the read): {@code submit}, from the read's start until libphoenix queued the batch
     * (the requests filled in, and the files opened, except for reads started before the parse,
     * which open them during the allocation); {@code start}, until a worker took its first
     * task; {@code transfer}, until its last task ended; {@code complete}, until the loader
     * had the results and the read ended (the hand-off back, and for an early read whatever of
     * the parse, plan and views still ran after the transfer).
     */
    record ReadSplit(long submit, long start, long transfer, long complete) {
        /** From the read's bounds and the batch's times; null when they are unknown or out of order. */
        static ReadSplit of(long readStart, long[] times, long readEnd) {
            if (times == null || times[0] < readStart || times[1] < times[0] || times[2] < times[1] || readEnd < times[2]) {
                return null;
            }
            return new ReadSplit(times[0] - readStart, times[1] - times[0], times[2] - times[1], readEnd - times[2]);
        }
    }

    /**
     * The allocate phase of a load whose reads started before the parse, taken apart (seconds).
     * On the loading thread, one after another (they tile {@link #allocateSeconds()}):
     * {@code extents}, each file's data section found from its header length and size;
     * {@code opens}, the files opened (and asked how much of each is in the page cache);
     * {@code allocationWait}, waiting for the destination after the opens; {@code other}, the
     * rest (the files' sizes, from which the destination's size follows; the device looked up;
     * the allocating thread started; the requests made). Beside them, on a thread of its own
     * from before the extents: {@code allocation}, the destination's allocation itself (device
     * memory, or host memory for a host copy).
     *
     * @param extentsSeconds        finding the data sections
     * @param opensSeconds          opening the files
     * @param allocationWaitSeconds waiting for the allocation after the opens
     * @param otherSeconds          the rest of the phase
     * @param allocationSeconds     the allocation on its own thread, overlapping the extents and the opens
     */
    public record AllocateSplit(double extentsSeconds, double opensSeconds, double allocationWaitSeconds,
                                double otherSeconds, double allocationSeconds) {
    }

    /**
     * The allocate phase taken apart, for a load whose reads started before the parse (the
     * usual load onto one device, or a host copy).
     *
     * @return its parts, or empty for other loads
     */
    public java.util.Optional<AllocateSplit> allocateSplit() {
        return java.util.Optional.ofNullable(phases.allocateSplit());
    }

    /** With {@link WeightLoader.Builder#replicate}: each device's tensors; empty otherwise. */
    private final Map<Integer, Map<String, LoadedTensor>> replicas;

    LoadedModel(ModelFiles model, ReadPlan plan, SortedMap<Integer, RegisteredBuffer> buffers,
                List<AutoCloseable> owned, Map<String, LoadedTensor> tensors,
                Map<Integer, Map<String, LoadedTensor>> replicas, long nanos, Phases phases) {
        this.model = model;
        this.plan = plan;
        this.buffers = Collections.unmodifiableSortedMap(buffers);
        this.owned = List.copyOf(owned);
        // the map is the loader's, made for this model: kept, not copied (96,000 entries copied
        // twice cost a fresh JVM tens of milliseconds)
        this.all = Collections.unmodifiableMap(tensors);
        this.nanos = nanos;
        this.phases = phases;
        Map<Integer, Map<String, LoadedTensor>> r = new LinkedHashMap<>();
        replicas.forEach((d, m) -> r.put(d, Collections.unmodifiableMap(new LinkedHashMap<>(m))));
        this.replicas = Collections.unmodifiableMap(r);
    }

    /**
     * The files the tensors came from.
     *
     * @return the model's files
     */
    public ModelFiles model() {
        return model;
    }

    /**
     * The plan of the load. With caller memory its targets are the caller buffers' devices;
     * its per-target buffers and requests describe nothing that was allocated or read (each
     * tensor was read into its own destination).
     *
     * @return the plan
     */
    public ReadPlan plan() {
        return plan;
    }

    /**
     * The loaded tensors in model order, less those {@link #release released}: an unmodifiable
     * view (iterate it on one thread, not while another releases tensors).
     *
     * @return the tensors by name
     */
    public Map<String, LoadedTensor> tensors() {
        return Collections.unmodifiableMap(tensors);
    }

    /**
     * The tensors in memory of one device (or {@link Placement#HOST}), in model order. After
     * {@link WeightLoader.Builder#replicate} every device holds all of them, each device's
     * its own copy; otherwise these are the tensors of {@link #tensors()} placed there.
     *
     * @param target a device id, or {@link Placement#HOST}
     * @return the tensors by name, empty when the target holds none
     */
    public Map<String, LoadedTensor> tensorsOn(int target) {
        if (!replicas.isEmpty()) {
            return replicas.getOrDefault(target, Map.of());
        }
        Map<String, LoadedTensor> m = new LinkedHashMap<>();
        for (LoadedTensor t : tensors.values()) {
            if (t.target() == target) {
                m.put(t.name(), t);
            }
        }
        return Collections.unmodifiableMap(m);
    }

    /**
     * A loaded tensor by name; empty when not loaded or already released.
     *
     * @param name the tensor's name
     * @return the tensor, or empty
     */
    public Optional<LoadedTensor> tensor(String name) {
        return Optional.ofNullable(tensors.get(name));
    }

    /**
     * Lets go of one tensor's memory before the model closes, where that memory is the
     * tensor's alone: a buffer {@link TensorDestination#owned handed over} by a
     * {@link TensorAllocator} is closed (freed); caller memory that the caller keeps
     * ({@link TensorDestination#borrowed}) is only forgotten. Either way the tensor leaves
     * {@link #tensors()} and any further use of it throws IllegalStateException. Releasing a
     * released tensor again returns true and does nothing.
     *
     * <p>A tensor in one of this model's per-target buffers shares that allocation with the
     * other tensors of its target (and, mapped, with the files' pages): its memory comes back
     * only when the model closes. Then nothing happens, the tensor stays usable, and the
     * answer is false.
     *
     * @return true when the tensor's memory was let go; false when it cannot be before close
     * @throws IllegalArgumentException when no tensor of that name was loaded
     * @throws io.phxfs.core.PhoenixException EBUSY when an operation still uses the tensor's buffer
     * @param name the name of a loaded tensor
     */
    public boolean release(String name) {
        LoadedTensor t = all.get(name);
        if (t == null) {
            throw new IllegalArgumentException(model.path() + ": no loaded " + Names.tensor(name));
        }
        if (!t.release()) {
            return false;
        }
        released.add(name);
        return true;
    }

    /**
     * The buffer of a target (device id or {@link Placement#HOST}); none with caller memory.
     * The tensors lie in its first {@code plan().bufferBytes().get(target)} bytes; a load whose
     * reads started before the parse sized it from the files (by about their headers larger),
     * and what lies past the tensors is unspecified.
     *
     * @param target a device id, or {@link Placement#HOST}
     * @return the target's buffer, or empty when it has none
     */
    public Optional<RegisteredBuffer> buffer(int target) {
        return Optional.ofNullable(buffers.get(target));
    }

    /**
     * True when the host-placed tensors are read-only views of the files mapped into memory
     * (the default for page-cache-warm files): writing through their segments throws. False
     * when they were copied into writable memory ({@link WeightLoader.Builder#writable}), or
     * no tensor is in host memory.
     *
     * @return true when host-placed tensors are mapped read-only
     */
    public boolean hostMapped() {
        return owned.stream().anyMatch(HostMapping.class::isInstance);
    }

    /**
     * Every buffer, by target.
     *
     * @return the buffers by target, empty with caller memory
     */
    public SortedMap<Integer, RegisteredBuffer> buffers() {
        return buffers;
    }

    /**
     * Bytes of the loaded tensors.
     *
     * @return the bytes of every loaded tensor
     */
    public long bytes() {
        return plan.tensorBytes();
    }

    /**
     * Files read.
     *
     * @return the number of files read
     */
    public int fileCount() {
        return plan.fileCount();
    }

    /**
     * Wall time of the load: headers, plan, allocation and reads.
     *
     * @return the load's seconds
     */
    public double seconds() {
        return nanos / 1e9;
    }

    /**
     * Seconds spent allocating (and registering) the destination buffers, within {@link #seconds()}.
     *
     * @return the allocation's seconds
     */
    public double allocateSeconds() {
        return phases.allocate() / 1e9;
    }

    /**
     * Seconds from the first read submitted to the last one completed, within {@link #seconds()}.
     * When the load parsed the headers itself ({@link WeightLoader#load(java.nio.file.Path)})
     * and everything goes to one target, the reads start before the parse: then this overlaps
     * {@link #parseSeconds()} and {@link #planSeconds()}.
     *
     * @return the reads' seconds
     */
    public double readSeconds() {
        return phases.read() / 1e9;
    }

    /**
     * Seconds spent reading and validating the headers within {@link #seconds()}; 0 when the
     * load was given a parsed {@link ModelFiles}.
     *
     * @return the parse's seconds
     */
    public double parseSeconds() {
        return phases.parse() / 1e9;
    }

    /**
     * Seconds spent planning the reads ({@link ReadPlan}), within {@link #seconds()}.
     *
     * @return the plan's seconds
     */
    public double planSeconds() {
        return phases.plan() / 1e9;
    }

    /**
     * Seconds spent finding the model's files and reading its index, within {@link #seconds()}
     * and before any read.
     *
     * @return the locate's seconds (0 when the load was given a parsed {@link ModelFiles})
     */
    public double locateSeconds() {
        return phases.locate() / 1e9;
    }

    /**
     * Whether the reads started before the parse, so that {@link #parseSeconds()},
     * {@link #planSeconds()} and {@link #viewSeconds()} ran during {@link #readSeconds()}.
     *
     * @return true when the parse, the plan and the views overlapped the reads
     */
    public boolean readsOverlapParse() {
        return phases.overlapped();
    }

    /**
     * Seconds of {@link #seconds()} in no phase: {@link #seconds()} minus the phases that
     * follow one another (see {@link #readsOverlapParse()}). Near zero; more says where a
     * phase's bounds are wrong.
     *
     * @return the unaccounted seconds
     */
    public double otherSeconds() {
        return (nanos - phases.critical()) / 1e9;
    }

    /**
     * Of {@link #readSeconds()}: from the read's start until libphoenix queued its batch (the
     * requests filled in and submitted; the files opened too, except for reads started before
     * the parse, whose files open during {@link #allocateSeconds()}).
     *
     * @return seconds, or NaN when the batch's times are not known
     */
    public double readSubmitSeconds() {
        return phases.split() == null ? Double.NaN : phases.split().submit() / 1e9;
    }

    /**
     * Of {@link #readSeconds()}: from the batch queued until a libphoenix worker took its first task.
     *
     * @return seconds, or NaN when the batch's times are not known
     */
    public double readStartSeconds() {
        return phases.split() == null ? Double.NaN : phases.split().start() / 1e9;
    }

    /**
     * Of {@link #readSeconds()}: from the first task taken until the last one ended, the
     * transfer as libphoenix saw it.
     *
     * @return seconds, or NaN when the batch's times are not known
     */
    public double readTransferSeconds() {
        return phases.split() == null ? Double.NaN : phases.split().transfer() / 1e9;
    }

    /**
     * Of {@link #readSeconds()}: from the last task's end until the read phase ended (the
     * completion's hand-off to the loader and its checks; for reads started before the parse,
     * also whatever of the parse, plan and views was still running).
     *
     * @return seconds, or NaN when the batch's times are not known
     */
    public double readCompleteSeconds() {
        return phases.split() == null ? Double.NaN : phases.split().complete() / 1e9;
    }

    /**
     * Seconds spent making the tensor map (one view per tensor), within {@link #seconds()}.
     *
     * @return the views' seconds
     */
    public double viewSeconds() {
        return phases.views() / 1e9;
    }

    /**
     * {@link #bytes()} per second, in GB (10^9).
     *
     * @return the throughput in GB/s, or 0 for a load that took no time
     */
    public double gbPerSecond() {
        return nanos == 0 ? 0 : bytes() / (double) nanos;
    }

    /**
     * Frees every buffer this model owns (its per-target buffers, the owned destinations of
     * tensors not yet released) and forgets borrowed caller memory; the tensors become
     * unusable. A second close does nothing.
     */
    @Override
    public void close() {
        RuntimeException failure = null;
        List<AutoCloseable> toClose = new ArrayList<>(all.size() + owned.size());
        all.values().forEach(t -> toClose.add(t::close));
        replicas.values().forEach(m -> m.values().forEach(t -> toClose.add(t::close)));
        toClose.addAll(owned);
        for (AutoCloseable c : toClose) {
            try {
                c.close();
            } catch (Exception e) {
                RuntimeException r = e instanceof RuntimeException re ? re : new IllegalStateException(e);
                if (failure == null) {
                    failure = r;
                } else {
                    failure.addSuppressed(r);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** {@link #all} less {@link #released}, as a map that follows later releases. */
    private final class Live extends java.util.AbstractMap<String, LoadedTensor> {
        @Override
        public LoadedTensor get(Object name) {
            if (name == null) {
                return null; // the concurrent set refuses null, the map never holds it
            }
            return !released.isEmpty() && released.contains(name) ? null : all.get(name);
        }

        @Override
        public boolean containsKey(Object name) {
            return get(name) != null;
        }

        @Override
        public int size() {
            return all.size() - released.size();
        }

        @Override
        public java.util.Set<Entry<String, LoadedTensor>> entrySet() {
            return new java.util.AbstractSet<>() {
                @Override
                public java.util.Iterator<Entry<String, LoadedTensor>> iterator() {
                    java.util.Iterator<Entry<String, LoadedTensor>> it = all.entrySet().iterator();
                    return new java.util.Iterator<>() {
                        private Entry<String, LoadedTensor> next = advance();

                        private Entry<String, LoadedTensor> advance() {
                            while (it.hasNext()) {
                                Entry<String, LoadedTensor> e = it.next();
                                if (released.isEmpty() || !released.contains(e.getKey())) {
                                    return e;
                                }
                            }
                            return null;
                        }

                        @Override
                        public boolean hasNext() {
                            return next != null;
                        }

                        @Override
                        public Entry<String, LoadedTensor> next() {
                            if (next == null) {
                                throw new java.util.NoSuchElementException();
                            }
                            Entry<String, LoadedTensor> e = next;
                            next = advance();
                            return e;
                        }
                    };
                }

                @Override
                public int size() {
                    return Live.this.size();
                }
            };
        }
    }

    @Override
    public String toString() {
        return "LoadedModel[" + model.path() + ", " + tensors.size() + " tensors, " + bytes() + " bytes, targets "
                + buffers.keySet() + "]";
    }
}
