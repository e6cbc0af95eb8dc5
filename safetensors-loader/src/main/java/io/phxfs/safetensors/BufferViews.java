package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.RegisteredBuffer;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The views of one load: each planned tensor as a {@link LoadedTensor} over its target's buffer
 * (or the host mapping). The lookups are per file and per target, not per tensor, and the work
 * is a method of its own: the loop that calls it runs once a load, so it stays interpreted,
 * while {@link #view} is compiled after a few hundred tensors (a model of
 * thousands of experts spent milliseconds in the loop's body before).
 */
final class BufferViews {
    private final Map<Integer, RegisteredBuffer> buffers;
    private final Map<Integer, Device> devs;
    private final HostMapping mapping;
    private SafetensorsHeader file;
    private long dataAt;
    private int target = Integer.MIN_VALUE;
    private RegisteredBuffer buffer;
    private Device device;

    private BufferViews(Map<Integer, RegisteredBuffer> buffers, Map<Integer, Device> devs, HostMapping mapping) {
        this.buffers = buffers;
        this.devs = devs;
        this.mapping = mapping;
    }

    /** One view per planned tensor into its target's buffer (or the host mapping), in the plan's order. */
    static Map<String, LoadedTensor> of(ReadPlan plan, Map<Integer, RegisteredBuffer> buffers,
                                        Map<Integer, Device> devs, HostMapping mapping) {
        Map<String, LoadedTensor> tensors = LinkedHashMap.newLinkedHashMap(plan.tensors().size());
        BufferViews v = new BufferViews(buffers, devs, mapping);
        for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
            tensors.put(p.name(), v.view(p));
        }
        return tensors;
    }

    private LoadedTensor view(ReadPlan.PlannedTensor p) {
        if (p.target() != target) {
            target = p.target();
            buffer = buffers.get(target);
            device = devs.get(target);
        }
        long at;
        if (mapping != null && target == Placement.HOST) {
            if (p.file() != file) {
                file = p.file();
                dataAt = mapping.dataOffsetOf(file);
            }
            at = dataAt + p.info().begin();
        } else {
            at = p.bufferOffset();
        }
        return new LoadedTensor(p.info(), p.file().file(), target, at, buffer, device, LoadedTensor.Memory.SHARED);
    }
}
