package io.phxfs.safetensors;

import io.phxfs.core.RegisteredBuffer;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;

/**
 * Tensors loaded by {@link WeightLoader}: one buffer per target, which this object owns and
 * frees on {@link #close()}; the tensors are views into those buffers.
 */
public final class LoadedModel implements AutoCloseable {
    private final ModelFiles model;
    private final ReadPlan plan;
    private final SortedMap<Integer, RegisteredBuffer> buffers;
    /** What frees the buffers' memory: device buffers themselves, host memory mappings. */
    private final List<AutoCloseable> owned;
    private final Map<String, LoadedTensor> tensors;
    private final long nanos;
    private final long allocateNanos;
    private final long readNanos;

    LoadedModel(ModelFiles model, ReadPlan plan, SortedMap<Integer, RegisteredBuffer> buffers,
                List<AutoCloseable> owned, Map<String, LoadedTensor> tensors, long nanos, long allocateNanos,
                long readNanos) {
        this.model = model;
        this.plan = plan;
        this.buffers = Collections.unmodifiableSortedMap(buffers);
        this.owned = List.copyOf(owned);
        this.tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
        this.nanos = nanos;
        this.allocateNanos = allocateNanos;
        this.readNanos = readNanos;
    }

    /** The files the tensors came from. */
    public ModelFiles model() {
        return model;
    }

    public ReadPlan plan() {
        return plan;
    }

    /** The loaded tensors in model order. */
    public Map<String, LoadedTensor> tensors() {
        return tensors;
    }

    public Optional<LoadedTensor> tensor(String name) {
        return Optional.ofNullable(tensors.get(name));
    }

    /** The buffer of a target (device id or {@link Placement#HOST}). */
    public Optional<RegisteredBuffer> buffer(int target) {
        return Optional.ofNullable(buffers.get(target));
    }

    /** Every buffer, by target. */
    public SortedMap<Integer, RegisteredBuffer> buffers() {
        return buffers;
    }

    /** Bytes of the loaded tensors. */
    public long bytes() {
        return plan.tensorBytes();
    }

    /** Files read. */
    public int fileCount() {
        return plan.fileCount();
    }

    /** Wall time of the load: headers, plan, allocation and reads. */
    public double seconds() {
        return nanos / 1e9;
    }

    /** {@link #bytes()} per second, in GB (10^9). */
    /** Seconds spent allocating (and registering) the destination buffers, within {@link #seconds()}. */
    public double allocateSeconds() {
        return allocateNanos / 1e9;
    }

    /** Seconds spent reading into the buffers, within {@link #seconds()}. */
    public double readSeconds() {
        return readNanos / 1e9;
    }

    public double gbPerSecond() {
        return nanos == 0 ? 0 : bytes() / (double) nanos;
    }

    /** Frees every buffer; the tensors become unusable. A second close does nothing. */
    @Override
    public void close() {
        RuntimeException failure = null;
        for (AutoCloseable c : owned) {
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

    @Override
    public String toString() {
        return "LoadedModel[" + model.path() + ", " + tensors.size() + " tensors, " + bytes() + " bytes, targets "
                + buffers.keySet() + "]";
    }
}
