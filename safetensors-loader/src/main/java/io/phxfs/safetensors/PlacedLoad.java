package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.HostMemoryPool;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.LoadBatch.Read;
import io.phxfs.safetensors.s3.S3Reads;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A load by placement ({@link WeightLoader.Builder#placement}, {@code toHost}, {@code toDevice},
 * {@code split}): one buffer per target, the host's either a mapping of the files (no copy) or
 * host memory the reads copy into, then the views. Decides whether host-placed tensors are
 * mapped, and which buffers may start uninitialized.
 */
final class PlacedLoad {
    /** null: decided per file (see {@link WeightLoader.Builder#direct}). */
    private final Boolean direct;
    /** null: map when the host files are warm (see {@link WeightLoader.Builder#mapHost}). */
    private final Boolean mapHost;
    private final boolean writable;
    private final HostMemoryPool hostPool;
    private final ReadRunner runner;

    PlacedLoad(Boolean direct, Boolean mapHost, boolean writable, HostMemoryPool hostPool, ReadRunner runner) {
        this.direct = direct;
        this.mapHost = mapHost;
        this.writable = writable;
        this.hostPool = hostPool;
        this.runner = runner;
    }

    /**
     * Allocates, reads and views {@code plan}. {@code t0}, {@code locateNanos}: as for any load;
     * {@code tPlan}, {@code planNanos}: when the plan began and how long it took;
     * {@code earlyMap}: the files' host mapping, under way since before the parse, or null;
     * this load owns it (takes it or abandons it).
     */
    LoadedModel load(ModelFiles model, ReadPlan plan, long t0, long locateNanos, long tPlan, long planNanos,
                     EarlyMapping earlyMap) {
        Phoenix phx = Phoenix.open();
        SortedMap<Integer, RegisteredBuffer> buffers = new TreeMap<>();
        List<AutoCloseable> owned = new ArrayList<>();
        Map<Integer, Device> devs = new HashMap<>();
        Set<Integer> uninitialized = new HashSet<>();
        // once taken (or refused) the early mapping is no longer this method's to abandon
        EarlyMapping pending = earlyMap;
        EarlyMapping populating = null; // taken: its pages may still be coming in
        try {
            for (int target : plan.targets()) {
                if (target != Placement.HOST) {
                    devs.put(target, phx.device(target));
                }
            }
            List<SafetensorsHeader> hostFiles = plan.files(Placement.HOST);
            HostMapping mapping = null;
            for (Map.Entry<Integer, Long> e : plan.bufferBytes().entrySet()) {
                int target = e.getKey();
                if (target == Placement.HOST && pending != null) {
                    EarlyMapping m = pending;
                    pending = null;
                    mapping = m.finish(hostFiles);
                    populating = mapping != null ? m : null;
                }
                if (target == Placement.HOST && (mapping != null || shouldMap(hostFiles))) {
                    if (mapping == null) {
                        mapping = HostMapping.map(phx, hostFiles);
                    }
                    owned.add(mapping);
                    buffers.put(target, mapping.buffer());
                } else if (target == Placement.HOST) {
                    RegisteredBuffer b = hostBuffer(phx, e.getValue());
                    owned.add(b);
                    buffers.put(target, b);
                    if (hostPool != null) {
                        // pooled memory holds an earlier model's bytes
                        if (readsCover(plan, target, e.getValue())) {
                            uninitialized.add(target);
                        } else {
                            b.segment().orElseThrow().fill((byte) 0);
                        }
                    }
                } else if (readsCover(plan, target, e.getValue())) {
                    // every byte is read before anyone sees it (tails past EOF are zeroed after)
                    RegisteredBuffer b = devs.get(target).allocateUninitialized(e.getValue());
                    owned.add(b);
                    buffers.put(target, b);
                    uninitialized.add(target);
                } else {
                    RegisteredBuffer b = devs.get(target).allocate(e.getValue());
                    owned.add(b);
                    buffers.put(target, b);
                }
            }
            if (pending != null) {
                pending.abandon(null); // the plan holds nothing for host memory
                pending = null;
            }
            long tRead = System.nanoTime();
            List<Read> reads = new ArrayList<>();
            for (ReadPlan.ReadRequest r : plan.requests()) {
                if (mapping == null || r.target() != Placement.HOST) {
                    reads.add(new Read(r.file().file(), buffers.get(r.target()), r.bufferOffset(), r.fileOffset(),
                            r.length(), r.neededLength(), uninitialized.contains(r.target())));
                }
            }
            // a mapping's bytes are in place once it is made (populated): progress counts them as done
            long mapped = mapping == null ? 0 : plan.targets().equals(Set.of(Placement.HOST)) ? plan.tensorBytes()
                    : plan.tensors().values().stream()
                            .filter(p -> p.target() == Placement.HOST).mapToLong(ReadPlan.PlannedTensor::nbytes).sum();
            // Host tensors of cold files are copied this time; read through the page cache (not
            // O_DIRECT), so that the next load finds the files warm and maps them instead of
            // copying from disk again (O_DIRECT left them cold load after load).
            Set<Path> warmUp = new HashSet<>();
            if (mapping == null && mapHost == null && direct == null && !writable && plan.targets().contains(Placement.HOST)) {
                hostFiles.forEach(h -> warmUp.add(h.file()));
            }
            if (populating != null && reads.isEmpty()) {
                // all mapped: the views are made while the pages come in, and waiting for the
                // last of them is this load's read
                long tViews = System.nanoTime();
                Map<String, LoadedTensor> tensors = BufferViews.of(plan, buffers, devs, mapping);
                long tViewsEnd = System.nanoTime();
                EarlyMapping p = populating;
                populating = null;
                p.awaitPopulated();
                runner.readAll(reads, warmUp::contains, mapped);
                long tEnd = System.nanoTime();
                return new LoadedModel(model, plan, buffers, owned, tensors, Map.of(), tEnd - t0,
                        LoadedModel.Phases.viewsDuringRead(t0, locateNanos, tPlan, planNanos, tRead, tViews, tViewsEnd, tEnd));
            }
            if (populating != null) {
                EarlyMapping p = populating;
                populating = null;
                p.awaitPopulated();
            }
            long[] times = runner.readAll(reads, warmUp::contains, mapped);
            long tViews = System.nanoTime();
            Map<String, LoadedTensor> tensors = BufferViews.of(plan, buffers, devs, mapping);
            long tEnd = System.nanoTime();
            return new LoadedModel(model, plan, buffers, owned, tensors, Map.of(), tEnd - t0,
                    LoadedModel.Phases.sequential(t0, locateNanos, tPlan, planNanos, tRead, tViews, tEnd)
                            .withSplit(LoadedModel.ReadSplit.of(tRead, times, tViews)));
        } catch (RuntimeException | Error e) {
            if (pending != null) {
                pending.abandon(e);
            }
            if (populating != null) {
                try {
                    populating.awaitPopulated(); // then unmapped with the rest
                } catch (RuntimeException | Error suppressed) {
                    if (suppressed != e) {
                        e.addSuppressed(suppressed);
                    }
                }
            }
            Cleanup.closeAll(owned, e);
            throw e;
        }
    }

    /**
     * Whether host-placed tensors become a mapping of {@code hostFiles}: never when they must be
     * writable or a file is an S3 object, as {@code mapHost} says when set, and otherwise only
     * when O_DIRECT was not asked for and each file is mostly in the page cache (a cold file is
     * copied instead).
     */
    private boolean shouldMap(List<SafetensorsHeader> hostFiles) {
        if (writable || S3Reads.any(hostFiles.stream().map(SafetensorsHeader::file).toList())) {
            return false; // an S3 object cannot be mapped: its host tensors are always copies
        }
        if (mapHost != null) {
            return mapHost;
        }
        if (Boolean.TRUE.equals(direct)) return false;
        for (SafetensorsHeader h : hostFiles) {
            try (PhxFile f = PhxFile.open(h.file(), OpenMode.READ)) {
                if (f.cachedFraction() < 0.5) return false;
            }
        }
        return true;
    }

    /** True when the target's requests, laid end to end, fill its buffer from 0 to {@code bytes}. */
    static boolean readsCover(ReadPlan plan, int target, long bytes) {
        long end = 0;
        List<ReadPlan.ReadRequest> rs = plan.requests().stream().filter(r -> r.target() == target)
                .sorted(Comparator.comparingLong(ReadPlan.ReadRequest::bufferOffset)).toList();
        for (ReadPlan.ReadRequest r : rs) {
            if (r.bufferOffset() != end) return false;
            end += r.length();
        }
        return end == bytes;
    }

    /** Host memory for copied tensors: from the caller's pool, or fresh (zeroed) huge-page memory. */
    RegisteredBuffer hostBuffer(Phoenix phx, long bytes) {
        return hostPool != null ? hostPool.allocate(bytes) : phx.host().allocateHuge(bytes);
    }
}
