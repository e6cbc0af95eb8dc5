package io.phxfs.safetensors;

import io.phxfs.core.RegisteredBuffer;
import java.util.Objects;

/**
 * Caller memory for one tensor: its bytes go to {@code buffer} from {@code offset}.
 * {@code owned} says who frees it: false, the caller (the loaded model only forgets it on
 * release or close); true, the loaded model, which closes the buffer when the tensor is
 * released or the model closed.
 *
 * @see TensorAllocator
 * @param buffer the memory the tensor goes into
 * @param offset where in {@code buffer} the tensor's first byte goes, {@code >= 0}
 * @param owned true when the loaded model frees the buffer
 */
public record TensorDestination(RegisteredBuffer buffer, long offset, boolean owned) {
    /**
     * Checks the destination.
     *
     * @throws IllegalArgumentException for a negative offset
     */
    public TensorDestination {
        Objects.requireNonNull(buffer, "buffer");
        if (offset < 0) {
            throw new IllegalArgumentException("negative offset " + offset + " into " + buffer);
        }
    }

    /**
     * The caller's buffer from {@code offset}; the caller keeps it and frees it.
     *
     * @param buffer the caller's buffer
     * @param offset where in {@code buffer} the tensor's first byte goes
     * @return a destination the caller frees
     */
    public static TensorDestination borrowed(RegisteredBuffer buffer, long offset) {
        return new TensorDestination(buffer, offset, false);
    }

    /**
     * The caller's buffer from offset 0; the caller keeps it and frees it.
     *
     * @param buffer the caller's buffer
     * @return a destination the caller frees
     */
    public static TensorDestination borrowed(RegisteredBuffer buffer) {
        return borrowed(buffer, 0);
    }

    /**
     * A buffer of this one tensor, handed over: the loaded model closes it on release or close.
     *
     * @param buffer a buffer for this tensor alone
     * @return a destination the loaded model frees
     */
    public static TensorDestination owned(RegisteredBuffer buffer) {
        return new TensorDestination(buffer, 0, true);
    }
}
