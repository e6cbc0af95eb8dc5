package io.phxfs.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.Placement;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * Phoenix-loaded tensors as DJL {@link NDArray}s without copying, and the conversions DJL
 * itself cannot make safely.
 *
 * <p>A tensor whose dtype DJL's PyTorch JNI maps (F32, F64, F16, U8, I8, I32, I64, BOOL), that
 * lies in host memory and has fewer than 2^31 elements in at most 2 GiB becomes an array over a
 * direct {@link ByteBuffer} view of its bytes ({@code torch::from_blob} through DJL). Every
 * other tensor (BF16, F8_E4M3, F8_E5M2, I16, U16, U32, U64, C64, larger tensors, empty tensors,
 * device memory) is wrapped through libtorch's C shim ({@link TorchShim}): DJL's own
 * {@code create} would terminate the JVM on those dtypes. Arrays of dtypes DJL does not know
 * report {@link DataType#UNKNOWN} (or DJL's name where it has one); use {@link #torchDtype},
 * {@link #toFloat32} or {@link #convert} with them rather than DJL operations.
 *
 * <p>The arrays alias Phoenix memory: they are valid while the {@link io.phxfs.safetensors.LoadedModel}
 * that holds it is open. {@link PhoenixWeights} ties the two lifetimes together.
 */
public final class TensorViews {
    private TensorViews() {
    }

    /**
     * The DJL data type that DJL's PyTorch JNI can create arrays of for {@code dtype}, or null
     * where DJL would terminate the JVM (or has no such type).
     *
     * @param dtype a safetensors dtype
     * @return DJL's type, or null when the array must be made through the C shim
     */
    public static DataType djlType(Dtype dtype) {
        return switch (dtype) {
            case F32 -> DataType.FLOAT32;
            case F64 -> DataType.FLOAT64;
            case F16 -> DataType.FLOAT16;
            case U8 -> DataType.UINT8;
            case I8 -> DataType.INT8;
            case I32 -> DataType.INT32;
            case I64 -> DataType.INT64;
            case BOOL -> DataType.BOOLEAN;
            default -> null;
        };
    }

    /**
     * Wraps a loaded tensor as an array of {@code manager} (a PyTorch engine manager) without
     * copying: the array's data pointer is the tensor's address.
     *
     * @param tensor a loaded tensor, in host memory or (with a CUDA libtorch) device memory
     * @param manager the PyTorch manager the array belongs to; a device tensor needs a manager
     *                on that GPU
     * @return an array over the tensor's memory
     * @throws UnsupportedOperationException for a dtype libtorch has no tensor type for (F4, F6, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ)
     * @throws IllegalArgumentException when the manager is not a PyTorch one or its device does not hold the tensor
     * @throws IllegalStateException when libtorch refuses the tensor (e.g. device memory with a CPU-only libtorch)
     */
    public static NDArray view(LoadedTensor tensor, NDManager manager) {
        PtNDManager pt = ptManager(manager);
        Device device = manager.getDevice();
        int target = tensor.target();
        if (target == Placement.HOST) {
            if (device.isGpu()) {
                throw new IllegalArgumentException(tensor.name() + " is in host memory; the manager is on " + device
                        + " (load with the device as target, or wrap it with a CPU manager and copy)");
            }
        } else if (!device.isGpu() || device.getDeviceId() != target) {
            throw new IllegalArgumentException(tensor.name() + " is in the memory of device " + target
                    + "; the manager is on " + device + " (create it with Device.gpu(" + target + "))");
        }
        long[] shape = tensor.shape();
        DataType djl = djlType(tensor.dtype());
        long numel = 1;
        for (long d : shape) {
            numel *= d;
        }
        boolean byBuffer = djl != null && target == Placement.HOST && numel > 0 && numel < Integer.MAX_VALUE
                && tensor.nbytes() <= Integer.MAX_VALUE;
        if (byBuffer) {
            MemorySegment seg = tensor.segment().orElseThrow(() -> new IllegalStateException(
                    tensor.name() + ": host memory without a segment"));
            ByteBuffer buf = seg.asByteBuffer().order(ByteOrder.nativeOrder());
            if (buf.isReadOnly()) {
                throw new IllegalArgumentException(tensor.name() + " is a read-only mapping of its file: an array over it "
                        + "would fault on the first write; load with WeightLoader.builder().writable(true)");
            }
            return pt.create(buf, new Shape(shape), djl);
        }
        TorchShim shim = TorchShim.get();
        int dtype = shim.dtype(torchName(tensor.dtype()));
        int devType = target == Placement.HOST ? shim.deviceCpu : shim.deviceCuda;
        int devIndex = target == Placement.HOST ? -1 : target;
        long address = tensor.address();
        long handle;
        if (numel == 0) {
            handle = shim.empty(shape, dtype, devType, devIndex);
        } else {
            if (target == Placement.HOST) {
                tensor.segment().filter(MemorySegment::isReadOnly).ifPresent(s -> {
                    throw new IllegalArgumentException(tensor.name() + " is a read-only mapping of its file: an array "
                            + "over it would fault on the first write; load with WeightLoader.builder().writable(true)");
                });
            }
            handle = shim.fromBlob(address, shape, dtype, devType, devIndex);
        }
        return new PtNDArray(pt, handle);
    }

    /**
     * Wraps Phoenix memory (host or device) as an array of {@code manager} without copying: a
     * contiguous {@code shape} tensor of {@code type} at the buffer's start. The buffer keeps
     * owning the memory: close the array before the buffer.
     *
     * @param buffer host memory, or device memory of the manager's GPU
     * @param shape the dimensions
     * @param type FLOAT32, FLOAT16 or BFLOAT16
     * @param manager a PyTorch manager on the buffer's device
     * @return an array over the buffer's bytes
     * @throws IllegalArgumentException when the buffer is too small or on another device
     * @throws IllegalStateException when libtorch refuses the memory (device memory with a CPU-only libtorch)
     */
    public static NDArray view(io.phxfs.core.RegisteredBuffer buffer, Shape shape, DataType type, NDManager manager) {
        PtNDManager pt = ptManager(manager);
        Device device = manager.getDevice();
        boolean host = buffer.isHost();
        if (host == device.isGpu() || !host && device.getDeviceId() != buffer.deviceId()) {
            throw new IllegalArgumentException("memory of " + (host ? "the host" : "device " + buffer.deviceId())
                    + " for an array of a manager on " + device);
        }
        long bytes = shape.size() * type.getNumOfBytes();
        if (bytes > buffer.size()) {
            throw new IllegalArgumentException(shape + " " + type + " needs " + bytes + " bytes; the buffer has " + buffer.size());
        }
        TorchShim shim = TorchShim.get();
        long handle = shim.fromBlob(buffer.address(), shape.getShape(), shim.dtype(Precision.torchName(type)),
                host ? shim.deviceCpu : shim.deviceCuda, host ? -1 : buffer.deviceId());
        return new PtNDArray(pt, handle);
    }

    /**
     * A new float32 array with the values of {@code array}, whatever its dtype (bf16, fp8, ...),
     * converted by libtorch ({@code copy_}), on the array's device, in its manager.
     *
     * @param array any PyTorch array
     * @return a new float32 array
     */
    public static NDArray toFloat32(NDArray array) {
        return convert(array, DataType.FLOAT32);
    }

    /**
     * A new array of {@code type} (FLOAT32, FLOAT16 or BFLOAT16) with the values of
     * {@code array}, converted by libtorch, in the array's manager. A BFLOAT16 result is an
     * array DJL reports as UNKNOWN: its dtype-taking operations must not be used on it.
     *
     * @param array any PyTorch array
     * @param type FLOAT32, FLOAT16 or BFLOAT16
     * @return a new array of that type
     * @throws IllegalArgumentException for another target type
     */
    public static NDArray convert(NDArray array, DataType type) {
        String name = switch (type) {
            case FLOAT32 -> "float32";
            case FLOAT16 -> "float16";
            case BFLOAT16 -> "bfloat16";
            default -> throw new IllegalArgumentException("conversion to " + type + ": only FLOAT32, FLOAT16 and BFLOAT16");
        };
        PtNDArray src = ptArray(array);
        TorchShim shim = TorchShim.get();
        Device device = array.getManager().getDevice();
        long[] shape = shim.shape(src.getHandle());
        long dst = shim.empty(shape, shim.dtype(name),
                device.isGpu() ? shim.deviceCuda : shim.deviceCpu, device.isGpu() ? device.getDeviceId() : -1);
        try {
            shim.copy(dst, src.getHandle());
        } catch (RuntimeException e) {
            shim.delete(dst);
            throw e;
        }
        return new PtNDArray((PtNDManager) array.getManager(), dst);
    }

    /**
     * The address of the array's first element, as libtorch reports it.
     *
     * @param array a PyTorch array
     * @return the data pointer
     */
    public static long dataPointer(NDArray array) {
        return TorchShim.get().dataPtr(ptArray(array).getHandle());
    }

    /**
     * The array's dtype as torch names it ({@code bfloat16}, {@code float8_e4m3fn}, ...), for
     * arrays of dtypes DJL reports as UNKNOWN.
     *
     * @param array a PyTorch array
     * @return the torch dtype name
     */
    public static String torchDtype(NDArray array) {
        TorchShim shim = TorchShim.get();
        int code = shim.dtypeOf(ptArray(array).getHandle());
        String n = shim.dtypeName(code);
        return n == null ? "dtype#" + code : n;
    }

    /**
     * The array's dimensions as libtorch reports them (safe for every dtype).
     *
     * @param array a PyTorch array
     * @return the dimensions
     */
    public static long[] shape(NDArray array) {
        return TorchShim.get().shape(ptArray(array).getHandle());
    }

    /**
     * The bytes of a contiguous array in host memory, read in place: a view, valid while the
     * array is open. Works for every dtype (DJL's {@code toByteBuffer} does not).
     *
     * @param array a contiguous PyTorch array on the CPU
     * @param bytesPerElement the width of its elements (the bits of its safetensors dtype / 8)
     * @return a read-only view of its bytes
     * @throws IllegalArgumentException for an array on a GPU
     */
    @SuppressWarnings("restricted") // libtorch reports the data pointer of a tensor of exactly this many bytes
    public static MemorySegment bytes(NDArray array, long bytesPerElement) {
        if (array.getManager().getDevice().isGpu()) {
            throw new IllegalArgumentException("bytes(): array on " + array.getManager().getDevice()
                    + "; copy it to the CPU first");
        }
        TorchShim shim = TorchShim.get();
        long h = ptArray(array).getHandle();
        long n = shim.numel(h) * bytesPerElement;
        if (n == 0) {
            return MemorySegment.NULL;
        }
        return MemorySegment.ofAddress(shim.dataPtr(h)).reinterpret(n).asReadOnly();
    }

    static String torchName(Dtype dtype) {
        return dtype.torchName().orElseThrow(() -> new UnsupportedOperationException(
                "dtype " + dtype + " has no tensor type in libtorch (torch has no " + dtype + " tensors)"));
    }

    private static PtNDManager ptManager(NDManager manager) {
        Objects.requireNonNull(manager, "manager");
        if (manager instanceof PtNDManager pt) {
            return pt;
        }
        throw new IllegalArgumentException("manager of engine " + manager.getEngine().getEngineName()
                + ": Phoenix arrays need DJL's PyTorch engine");
    }

    private static PtNDArray ptArray(NDArray array) {
        if (array instanceof PtNDArray pt) {
            return pt;
        }
        throw new IllegalArgumentException("array of engine " + array.getManager().getEngine().getEngineName()
                + ": needs DJL's PyTorch engine");
    }
}
