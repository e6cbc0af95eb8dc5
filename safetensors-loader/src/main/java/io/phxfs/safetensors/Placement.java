package io.phxfs.safetensors;

/**
 * Where each tensor goes: a device id, or {@link #HOST} for host memory. Every target gets
 * one buffer holding all of its tensors.
 */
@FunctionalInterface
public interface Placement {
    /** Host memory (libphoenix's device id -1). */
    int HOST = -1;

    /**
     * Not a target: what a placement given to {@link WeightLoader.Builder#split(java.util.List, Placement)}
     * answers for the tensors it leaves to the split's layer rule.
     */
    int BY_LAYER = -2;

    /**
     * The target of one tensor.
     *
     * @param tensor a tensor the load selected
     * @return a device id, or {@link #HOST}
     */
    int targetOf(TensorInfo tensor);

    /**
     * Everything on one target.
     *
     * @param target a device id, or {@link #HOST}
     * @return a placement that answers {@code target} for every tensor
     */
    static Placement all(int target) {
        return new SingleTarget(target);
    }
}

/** {@link Placement#all}: the loader can tell that every tensor goes to one target. */
record SingleTarget(int target) implements Placement {
    @Override
    public int targetOf(TensorInfo tensor) {
        return target;
    }
}
