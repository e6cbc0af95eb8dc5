package io.phxfs.safetensors;

/**
 * Where each tensor goes: a device id, or {@link #HOST} for host memory. Every target gets
 * one buffer holding all of its tensors.
 */
@FunctionalInterface
public interface Placement {
    /** Host memory (libphoenix's device id -1). */
    int HOST = -1;

    int targetOf(TensorInfo tensor);

    /** Everything on one target. */
    static Placement all(int target) {
        return t -> target;
    }
}
