package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.LoadBatch.Read;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@link WeightLoader.Builder#into}: loads into caller memory, one destination per tensor from
 * the caller's {@link TensorAllocator}. The loader owns no buffer here; destinations the
 * allocator hands over are closed if the load fails, borrowed ones are left alone.
 */
final class CallerMemoryLoad {
    private final TensorAllocator allocator;
    /** The buffers of {@code into(Map)}, to name those of tensors the model lacks; null for an allocator. */
    private final Map<String, RegisteredBuffer> intoBuffers;
    private final TensorSelector selector;
    private final ReadPlan.Options options;
    private final ReadRunner runner;

    CallerMemoryLoad(TensorAllocator allocator, Map<String, RegisteredBuffer> intoBuffers, TensorSelector selector,
                     ReadPlan.Options options, ReadRunner runner) {
        this.allocator = allocator;
        this.intoBuffers = intoBuffers;
        this.selector = selector;
        this.options = options;
        this.runner = runner;
    }

    /** Loads {@code model}; {@code t0} and {@code locateNanos} as for any load. */
    LoadedModel load(ModelFiles model, long t0, long locateNanos) {
        long tPlan = System.nanoTime();
        ReadPlan selection = ReadPlan.of(model, selector, Placement.all(Placement.HOST), options);
        if (intoBuffers != null) {
            List<String> unknown = intoBuffers.keySet().stream().filter(n -> model.tensor(n).isEmpty()).sorted().toList();
            if (!unknown.isEmpty()) {
                throw new IllegalArgumentException(model.path() + ": caller buffers for tensors the model does not have: "
                        + unknown.stream().map(Names::quote).toList());
            }
        }
        long planNanos = System.nanoTime() - tPlan;
        Phoenix phx = Phoenix.open();
        Map<String, TensorDestination> dests = new HashMap<>();
        List<AutoCloseable> handedOver = new ArrayList<>();
        try {
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
            Map<Integer, Device> devs = new HashMap<>();
            List<Read> reads = new ArrayList<>();
            for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
                TensorDestination d = dests.get(p.name());
                if (d == null) {
                    continue;
                }
                if (!d.buffer().isHost()) {
                    devs.computeIfAbsent(d.buffer().deviceId(), phx::device);
                }
                for (long off = 0; off < p.nbytes(); off += options.maxRequestBytes()) {
                    long len = Math.min(options.maxRequestBytes(), p.nbytes() - off);
                    reads.add(new Read(p.file().file(), d.buffer(), d.offset() + off, p.fileOffset() + off, len, len, false));
                }
            }
            long tRead = System.nanoTime();
            runner.readAll(reads, h -> true, 0);
            long tViews = System.nanoTime();
            Map<String, LoadedTensor> tensors = new LinkedHashMap<>();
            for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
                TensorDestination d = dests.get(p.name());
                tensors.put(p.name(), d == null
                        ? new LoadedTensor(p.info(), p.file().file(), p.target(), 0, null, null, LoadedTensor.Memory.BORROWED)
                        : new LoadedTensor(p.info(), p.file().file(), p.target(), d.offset(), d.buffer(),
                                devs.get(p.target()), d.owned() ? LoadedTensor.Memory.OWNED : LoadedTensor.Memory.BORROWED));
            }
            long tEnd = System.nanoTime();
            return new LoadedModel(model, plan, new TreeMap<>(), List.of(), tensors, Map.of(), tEnd - t0,
                    LoadedModel.Phases.sequential(t0, locateNanos, tPlan, planNanos, tRead, tViews, tEnd));
        } catch (RuntimeException | Error e) {
            Cleanup.closeAll(handedOver, e);
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
}
