package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A loaded tensor: a view (offset, shape, dtype) into a buffer: its target's buffer, which
 * the {@link LoadedModel} owns and shares among tensors, or caller memory from a
 * {@link TensorAllocator}. Any access after the model is closed or the tensor released
 * ({@link LoadedModel#release}) throws IllegalStateException.
 */
public final class LoadedTensor {
    /** What {@link LoadedModel#release} can do with a tensor's memory. */
    enum Memory {
        /** A slice of a buffer other tensors share: it returns when the model closes. */
        SHARED,
        /** Caller memory the caller frees: release forgets it. */
        BORROWED,
        /** A buffer of this tensor alone, handed to the model: release closes it. */
        OWNED
    }

    private final TensorInfo info;
    private final Path file;
    private final int target;
    private final long bufferOffset;
    private final RegisteredBuffer buffer;
    private final Device device;
    private final Memory memory;
    private final AtomicBoolean released = new AtomicBoolean();

    LoadedTensor(TensorInfo info, Path file, int target, long bufferOffset, RegisteredBuffer buffer, Device device,
                 Memory memory) {
        this.info = info;
        this.file = file;
        this.target = target;
        this.bufferOffset = bufferOffset;
        this.buffer = buffer;
        this.device = device;
        this.memory = memory;
    }

    /**
     * Lets go of the memory where it is this tensor's alone: closes an owned buffer, forgets a
     * borrowed one. Idempotent.
     *
     * @return false for a slice of a shared buffer, which stays (and stays usable) until the model closes
     */
    boolean release() {
        if (memory == Memory.SHARED) {
            return false;
        }
        if (released.compareAndSet(false, true) && memory == Memory.OWNED) {
            try {
                buffer.close();
            } catch (RuntimeException e) {
                released.set(false); // EBUSY: still in use, still this tensor's
                throw e;
            }
        }
        return true;
    }

    /** Closing the model: owned memory is freed, borrowed memory forgotten, shared memory the model frees. */
    void close() {
        if (memory != Memory.SHARED) {
            release();
        }
    }

    /**
     * True once the model let go of this tensor's own memory ({@link LoadedModel#release}, or
     * its close); a tensor in a shared buffer is never released, only unusable after close.
     *
     * @return true once released
     */
    public boolean isReleased() {
        return released.get();
    }

    private void checkUsable() {
        if (released.get()) {
            throw new IllegalStateException(Names.tensor(name()) + " was released");
        }
    }

    /**
     * The tensor's name.
     *
     * @return the name
     */
    public String name() {
        return info.name();
    }

    /**
     * The tensor's element type.
     *
     * @return the dtype
     */
    public Dtype dtype() {
        return info.dtype();
    }

    /**
     * The tensor's shape.
     *
     * @return a copy of the dimensions; empty for a scalar
     */
    public long[] shape() {
        return info.shape();
    }

    /**
     * The tensor's size.
     *
     * @return the size in bytes
     */
    public long nbytes() {
        return info.nbytes();
    }

    /**
     * The tensor as its header described it.
     *
     * @return the header's description of the tensor
     */
    public TensorInfo info() {
        return info;
    }

    /**
     * The file it was read from.
     *
     * @return the file's path
     */
    public Path file() {
        return file;
    }

    /**
     * Device id, or {@link Placement#HOST}.
     *
     * @return the target the tensor was loaded into
     */
    public int target() {
        return target;
    }

    /**
     * Offset of the first byte within {@link #buffer()}.
     *
     * @return the offset in bytes
     */
    public long bufferOffset() {
        return bufferOffset;
    }

    /**
     * The buffer holding the bytes; empty for a tensor of 0 bytes when its target needed no buffer.
     *
     * @return the buffer, or empty
     */
    public Optional<RegisteredBuffer> buffer() {
        checkUsable();
        return Optional.ofNullable(buffer);
    }

    /**
     * Address of the first byte (a device pointer for device memory); 0 for an empty tensor without buffer.
     *
     * @return the address, or 0
     */
    public long address() {
        checkUsable();
        return buffer == null ? 0 : buffer.address() + bufferOffset;
    }

    /**
     * The bytes as a segment where Java may touch them (host memory, the host connector's
     * device memory); empty for accelerator memory, which {@link #copyTo} reaches.
     *
     * @return the segment, or empty for accelerator memory
     */
    public Optional<MemorySegment> segment() {
        checkUsable();
        if (nbytes() == 0) {
            return Optional.of(MemorySegment.NULL);
        }
        return buffer.segment().map(s -> s.asSlice(bufferOffset, nbytes()));
    }

    /**
     * Copies {@code dst.byteSize()} bytes from {@code offset} within the tensor into host memory.
     *
     * @param offset where in the tensor the copy starts
     * @param dst the host memory to fill; its size is the number of bytes copied
     */
    public void copyTo(long offset, MemorySegment dst) {
        checkUsable();
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

    /**
     * All bytes into a new array (small tensors; at most 2 GiB).
     *
     * @return a new array with the tensor's bytes
     * @throws IllegalStateException when the tensor is too large for an array
     */
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
