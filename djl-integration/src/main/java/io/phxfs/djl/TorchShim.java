package io.phxfs.djl;

import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.LibUtils;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * PyTorch's stable C shim ({@code aoti_torch_*}, torch/csrc/inductor/aoti_torch/c/shim.h) in the
 * libtorch that DJL's PyTorch engine loaded, called through java.lang.foreign. A DJL
 * {@code PtNDArray} handle is an {@code at::Tensor*}, as is the shim's {@code AtenTensorHandle},
 * so tensors made here become DJL arrays, in every dtype libtorch has (DJL's JNI maps only nine
 * and terminates the JVM on the others). Every call returns an error code, which becomes an
 * exception here: the shim catches C++ exceptions itself.
 */
@SuppressWarnings("restricted") // the one class that links libtorch; the module needs native access anyway
final class TorchShim {
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT;
    private static final java.lang.foreign.AddressLayout ADDR = ValueLayout.ADDRESS;

    private static volatile TorchShim instance;

    final int deviceCpu;
    final int deviceCuda;
    private final Map<String, Integer> dtypes = new HashMap<>();
    private final MethodHandle fromBlob;
    private final MethodHandle emptyStrided;
    private final MethodHandle dataPtr;
    private final MethodHandle copy;
    private final MethodHandle getDtype;
    private final MethodHandle getDim;
    private final MethodHandle getSizes;
    private final MethodHandle getNumel;
    private final MethodHandle deleteTensor;
    private final Path library;

    private TorchShim(Path library) {
        this.library = library;
        // the library stays loaded as long as the JVM: DJL loaded it before and never unloads it
        SymbolLookup lib = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        java.util.function.BiFunction<String, FunctionDescriptor, MethodHandle> f = (name, d) -> linker
                .downcallHandle(lib.find(name).orElseThrow(() -> new UnsupportedOperationException(
                        library + " does not export " + name + ": not a libtorch with the AOTInductor C shim (2.2 or later)")), d);
        fromBlob = f.apply("aoti_torch_create_tensor_from_blob",
                FunctionDescriptor.of(I32, ADDR, I64, ADDR, ADDR, I64, I32, I32, I32, ADDR));
        emptyStrided = f.apply("aoti_torch_empty_strided", FunctionDescriptor.of(I32, I64, ADDR, ADDR, I32, I32, I32, ADDR));
        dataPtr = f.apply("aoti_torch_get_data_ptr", FunctionDescriptor.of(I32, ADDR, ADDR));
        copy = f.apply("aoti_torch_copy_", FunctionDescriptor.of(I32, ADDR, ADDR, I32));
        getDtype = f.apply("aoti_torch_get_dtype", FunctionDescriptor.of(I32, ADDR, ADDR));
        getDim = f.apply("aoti_torch_get_dim", FunctionDescriptor.of(I32, ADDR, ADDR));
        getSizes = f.apply("aoti_torch_get_sizes", FunctionDescriptor.of(I32, ADDR, ADDR));
        getNumel = f.apply("aoti_torch_get_numel", FunctionDescriptor.of(I32, ADDR, ADDR));
        deleteTensor = f.apply("aoti_torch_delete_tensor_object", FunctionDescriptor.of(I32, ADDR));
        for (String name : new String[] {"float8_e5m2", "float8_e4m3fn", "bfloat16", "float16", "float32", "float64",
                "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "bool", "complex64"}) {
            MethodHandle h = f.apply("aoti_torch_dtype_" + name, FunctionDescriptor.of(I32));
            try {
                dtypes.put(name, (int) h.invokeExact());
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
        try {
            deviceCpu = (int) f.apply("aoti_torch_device_type_cpu", FunctionDescriptor.of(I32)).invokeExact();
            deviceCuda = (int) f.apply("aoti_torch_device_type_cuda", FunctionDescriptor.of(I32)).invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The shim of the libtorch the PyTorch engine loaded (starting the engine if it is not yet). */
    static TorchShim get() {
        TorchShim s = instance;
        if (s == null) {
            synchronized (TorchShim.class) {
                s = instance;
                if (s == null) {
                    Engine.getEngine("PyTorch"); // loads libtorch (and fails clearly when it cannot)
                    Path dir = Path.of(LibUtils.getLibtorchPath());
                    Path lib = dir.resolve("libtorch_cpu.so");
                    if (!Files.isRegularFile(lib)) {
                        throw new IllegalStateException("libtorch_cpu.so not found in " + dir
                                + ", the libtorch directory DJL's PyTorch engine loaded");
                    }
                    s = new TorchShim(lib);
                    instance = s;
                }
            }
        }
        return s;
    }

    /** The libtorch_cpu.so whose shim this is. */
    Path library() {
        return library;
    }

    /** libtorch's dtype code of a torch dtype name ({@code bfloat16}, {@code float8_e4m3fn}, ...). */
    int dtype(String torchName) {
        Integer d = dtypes.get(torchName);
        if (d == null) {
            throw new UnsupportedOperationException("dtype " + torchName + " has no tensor type in libtorch's C shim");
        }
        return d;
    }

    /** The torch name of a libtorch dtype code, or null for one this class does not know. */
    String dtypeName(int code) {
        for (Map.Entry<String, Integer> e : dtypes.entrySet()) {
            if (e.getValue() == code) {
                return e.getKey();
            }
        }
        return null;
    }

    private static void check(int rc, String what) {
        if (rc != 0) {
            throw new IllegalStateException(what + " failed in libtorch (AOTI error " + rc
                    + "; libtorch printed the reason on stderr)");
        }
    }

    /** A contiguous tensor over {@code address} that does not own the memory. */
    long fromBlob(long address, long[] shape, int dtype, int deviceType, int deviceIndex) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sizes = a.allocate(I64, Math.max(1, shape.length));
            MemorySegment strides = a.allocate(I64, Math.max(1, shape.length));
            long stride = 1;
            for (int i = shape.length - 1; i >= 0; i--) {
                sizes.setAtIndex(I64, i, shape[i]);
                strides.setAtIndex(I64, i, stride);
                stride *= Math.max(1, shape[i]);
            }
            MemorySegment out = a.allocate(ADDR);
            int rc = (int) fromBlob.invokeExact(MemorySegment.ofAddress(address), (long) shape.length, sizes, strides,
                    0L, dtype, deviceType, deviceIndex, out);
            check(rc, "aoti_torch_create_tensor_from_blob");
            return out.get(ADDR, 0).address();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** A new uninitialised contiguous tensor that libtorch allocates (and frees with the handle). */
    long empty(long[] shape, int dtype, int deviceType, int deviceIndex) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sizes = a.allocate(I64, Math.max(1, shape.length));
            MemorySegment strides = a.allocate(I64, Math.max(1, shape.length));
            long stride = 1;
            for (int i = shape.length - 1; i >= 0; i--) {
                sizes.setAtIndex(I64, i, shape[i]);
                strides.setAtIndex(I64, i, stride);
                stride *= Math.max(1, shape[i]);
            }
            MemorySegment out = a.allocate(ADDR);
            int rc = (int) emptyStrided.invokeExact((long) shape.length, sizes, strides, dtype, deviceType, deviceIndex, out);
            check(rc, "aoti_torch_empty_strided");
            return out.get(ADDR, 0).address();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Copies {@code src} into {@code dst}, converting the dtype (torch's {@code Tensor.copy_}). */
    void copy(long dst, long src) {
        try {
            int rc = (int) copy.invokeExact(MemorySegment.ofAddress(dst), MemorySegment.ofAddress(src), 0);
            check(rc, "aoti_torch_copy_");
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The address of the tensor's first element. */
    long dataPtr(long tensor) {
        return getPtr(dataPtr, tensor, "aoti_torch_get_data_ptr");
    }

    /** The tensor's libtorch dtype code. */
    int dtypeOf(long tensor) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(I32);
            check((int) getDtype.invokeExact(MemorySegment.ofAddress(tensor), out), "aoti_torch_get_dtype");
            return out.get(I32, 0);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The tensor's element count. */
    long numel(long tensor) {
        return getLong(getNumel, tensor, "aoti_torch_get_numel");
    }

    /** The tensor's dimensions. */
    long[] shape(long tensor) {
        int dim = (int) getLong(getDim, tensor, "aoti_torch_get_dim");
        long sizes = getPtr(getSizes, tensor, "aoti_torch_get_sizes");
        long[] shape = new long[dim];
        MemorySegment s = MemorySegment.ofAddress(sizes).reinterpret(8L * dim);
        for (int i = 0; i < dim; i++) {
            shape[i] = s.getAtIndex(I64, i);
        }
        return shape;
    }

    /** Deletes a tensor handle that no DJL array owns (one made here that could not be handed over). */
    void delete(long tensor) {
        try {
            check((int) deleteTensor.invokeExact(MemorySegment.ofAddress(tensor)), "aoti_torch_delete_tensor_object");
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static long getLong(MethodHandle h, long tensor, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(I64);
            check((int) h.invokeExact(MemorySegment.ofAddress(tensor), out), what);
            return out.get(I64, 0);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static long getPtr(MethodHandle h, long tensor, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDR);
            check((int) h.invokeExact(MemorySegment.ofAddress(tensor), out), what);
            return out.get(ADDR, 0).address();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
