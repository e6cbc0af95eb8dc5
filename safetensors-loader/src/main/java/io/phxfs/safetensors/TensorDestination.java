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
 */
public record TensorDestination(RegisteredBuffer buffer, long offset, boolean owned) {
    /** @throws IllegalArgumentException for a negative offset */
    public TensorDestination {
        Objects.requireNonNull(buffer, "buffer");
        if (offset < 0) {
            throw new IllegalArgumentException("negative offset " + offset + " into " + buffer);
        }
    }

    /** The caller's buffer from {@code offset}; the caller keeps it and frees it. */
    public static TensorDestination borrowed(RegisteredBuffer buffer, long offset) {
        return new TensorDestination(buffer, offset, false);
    }

    /** The caller's buffer from offset 0; the caller keeps it and frees it. */
    public static TensorDestination borrowed(RegisteredBuffer buffer) {
        return borrowed(buffer, 0);
    }

    /** A buffer of this one tensor, handed over: the loaded model closes it on release or close. */
    public static TensorDestination owned(RegisteredBuffer buffer) {
        return new TensorDestination(buffer, 0, true);
    }
}
