package io.phxfs.safetensors;

import io.phxfs.core.RegisteredBuffer;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongFunction;

/**
 * Where each tensor's bytes go when the caller provides the memory, so that a framework can
 * allocate every tensor itself (an NDArray's native memory, say) and the loader reads
 * straight into it: {@link WeightLoader.Builder#into(TensorAllocator)}.
 *
 * <p>Called once per selected tensor of at least one byte, in model order, on the loading
 * thread, before any read; empty tensors need no memory and are not asked for. The loader
 * checks that the tensor fits the destination and fails naming tensor and sizes when not.
 */
@FunctionalInterface
public interface TensorAllocator {
    /**
     * The memory for {@code tensor}: at least {@code tensor.nbytes()} bytes from the
     * destination's offset, host memory or registered device memory.
     *
     * @param tensor the tensor to place
     * @return where its bytes go
     */
    TensorDestination destinationOf(TensorInfo tensor);

    /**
     * Each tensor into the caller's buffer of its name, from offset 0; the caller keeps the
     * buffers. A selected tensor without a buffer fails the load.
     *
     * @param buffers the caller's buffers, by tensor name
     * @return an allocator handing out the caller's buffers
     */
    static TensorAllocator of(Map<String, RegisteredBuffer> buffers) {
        Map<String, RegisteredBuffer> copy = Map.copyOf(buffers);
        return t -> {
            RegisteredBuffer b = copy.get(t.name());
            if (b == null) {
                throw new IllegalArgumentException("no caller buffer for " + Names.tensor(t.name()) + " (" + t.nbytes()
                        + " bytes)");
            }
            return TensorDestination.borrowed(b);
        };
    }

    /**
     * A buffer of its own for each tensor, from {@code allocate(nbytes)} (e.g.
     * {@code device::allocate}), owned by the loaded model: releasing a tensor frees its memory.
     *
     * @param allocate a source of buffers of a given size in bytes
     * @return an allocator giving each tensor a new buffer
     */
    static TensorAllocator perTensor(LongFunction<RegisteredBuffer> allocate) {
        Objects.requireNonNull(allocate);
        return t -> TensorDestination.owned(allocate.apply(t.nbytes()));
    }
}
