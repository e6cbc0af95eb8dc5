package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

/**
 * A loaded tensor: a view (offset, shape, dtype) into its target's buffer, which the
 * {@link LoadedModel} owns. Any access after the model is closed throws IllegalStateException.
 */
public final class LoadedTensor {
    private final TensorInfo info;
    private final Path file;
    private final int target;
    private final long bufferOffset;
    private final RegisteredBuffer buffer;
    private final Device device;

    LoadedTensor(TensorInfo info, Path file, int target, long bufferOffset, RegisteredBuffer buffer, Device device) {
        this.info = info;
        this.file = file;
        this.target = target;
        this.bufferOffset = bufferOffset;
        this.buffer = buffer;
        this.device = device;
    }

    public String name() {
        return info.name();
    }

    public Dtype dtype() {
        return info.dtype();
    }

    public long[] shape() {
        return info.shape();
    }

    public long nbytes() {
        return info.nbytes();
    }

    /** The tensor as its header described it. */
    public TensorInfo info() {
        return info;
    }

    /** The file it was read from. */
    public Path file() {
        return file;
    }

    /** Device id, or {@link Placement#HOST}. */
    public int target() {
        return target;
    }

    /** Offset of the first byte within the target's buffer. */
    public long bufferOffset() {
        return bufferOffset;
    }

    /** The buffer holding the bytes; empty for a tensor of 0 bytes when its target needed no buffer. */
    public Optional<RegisteredBuffer> buffer() {
        return Optional.ofNullable(buffer);
    }

    /** Address of the first byte (a device pointer for device memory); 0 for an empty tensor without buffer. */
    public long address() {
        return buffer == null ? 0 : buffer.address() + bufferOffset;
    }

    /**
     * The bytes as a segment where Java may touch them (host memory, the host connector's
     * device memory); empty for accelerator memory, which {@link #copyTo} reaches.
     */
    public Optional<MemorySegment> segment() {
        if (nbytes() == 0) {
            return Optional.of(MemorySegment.NULL);
        }
        return buffer.segment().map(s -> s.asSlice(bufferOffset, nbytes()));
    }

    /** Copies {@code dst.byteSize()} bytes from {@code offset} within the tensor into host memory. */
    public void copyTo(long offset, MemorySegment dst) {
        long len = dst.byteSize();
        if (offset < 0 || offset > nbytes() || len > nbytes() - offset) {
            throw new IndexOutOfBoundsException("copyTo: [" + offset + ", " + offset + "+" + len + ") outside "
                    + Names.tensor(name()) + " of " + nbytes() + " bytes");
        }
        if (len == 0) {
            return;
        }
        Optional<MemorySegment> host = buffer.segment();
        if (host.isPresent()) {
            MemorySegment.copy(host.get(), bufferOffset + offset, dst, 0, len);
        } else {
            device.copyToHost(buffer, bufferOffset + offset, dst);
        }
    }

    /** All bytes into a new array (small tensors; at most 2 GiB). */
    public byte[] toByteArray() {
        if (nbytes() > Integer.MAX_VALUE - 16) {
            throw new IllegalStateException(Names.tensor(name()) + " has " + nbytes() + " bytes, too many for an array");
        }
        byte[] out = new byte[(int) nbytes()];
        copyTo(0, MemorySegment.ofArray(out));
        return out;
    }

    @Override
    public String toString() {
        return "LoadedTensor[" + name() + " " + dtype() + Arrays.toString(info.shape()) + ", "
                + (target == Placement.HOST ? "host" : "device " + target) + " +" + bufferOffset + "]";
    }
}
