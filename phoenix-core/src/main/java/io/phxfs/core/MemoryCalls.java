package io.phxfs.core;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.phxfs.core.NativeLibrary.downcall;
import static io.phxfs.core.NativeLibrary.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** phoenix.h: registration, device memory, pinned host memory, copies, pointer checks. */
final class MemoryCalls {
    private static final FunctionDescriptor DEV_PTR = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);
    private static final FunctionDescriptor DEV_PTR_LEN = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final FunctionDescriptor ALLOC = FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS);
    private static final FunctionDescriptor MEMCPY = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_LONG);
    private static final FunctionDescriptor MEMCPY_ASYNC = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_LONG, ADDRESS);

    private static final MethodHandle REGMEM = downcall("phxfs_regmem",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    private static final MethodHandle DEREGMEM = downcall("phxfs_deregmem", DEV_PTR_LEN);
    private static final MethodHandle MEM_ALLOC = downcall("phxfs_mem_alloc", ALLOC);
    private static final MethodHandle MEM_ALLOC_UNINIT = downcall("phxfs_mem_alloc_uninit", ALLOC);
    private static final MethodHandle MEM_FREE = downcall("phxfs_mem_free", DEV_PTR);
    private static final MethodHandle MEMCPY_TO_HOST = downcall("phxfs_memcpy_to_host", MEMCPY);
    private static final MethodHandle MEMCPY_TO_DEVICE = downcall("phxfs_memcpy_to_device", MEMCPY);
    // core-2 calls
    private static final MethodHandle HOST_ALLOC_PINNED = downcall("phxfs_host_alloc_pinned",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
    private static final MethodHandle HOST_FREE_PINNED = downcall("phxfs_host_free_pinned",
            FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MEMCPY_TO_DEVICE_ASYNC = downcall("phxfs_memcpy_to_device_async",
            MEMCPY_ASYNC);
    private static final MethodHandle MEMCPY_TO_HOST_ASYNC = downcall("phxfs_memcpy_to_host_async",
            MEMCPY_ASYNC);
    private static final MethodHandle CHECK_DEVICE_POINTER = downcall("phxfs_check_device_pointer",
            DEV_PTR_LEN);
    // loader-2: several devices
    private static final MethodHandle CAN_ACCESS_PEER = downcall("phxfs_device_can_access_peer",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle MEMCPY_PEER = downcall("phxfs_memcpy_peer",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));

    private MemoryCalls() {
    }

    /** {@link Phoenix#prelinkDeviceCalls()}: every call on device -1 (refused at once), then an ADDRESS read. */
    static void prelink() {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            memAlloc(-1, 0, out);
            memAllocUninit(-1, 0, out);
            regmem(-1, MemorySegment.NULL, 0, out);
            deregmem(-1, MemorySegment.NULL, 0);
            memFree(-1, MemorySegment.NULL);
            memcpyToDevice(-1, MemorySegment.NULL, MemorySegment.NULL, 0);
            memcpyToHost(-1, MemorySegment.NULL, MemorySegment.NULL, 0);
            // the VarHandle of an ADDRESS read is made and linked on first use: 1.1-1.5 ms in a
            // fresh JVM, which the first allocation of a load paid (its returned pointer is one)
            out.get(ADDRESS, 0);
        }
    }

    static int regmem(int dev, MemorySegment addr, long len, MemorySegment targetOut) {
        try {
            return (int) REGMEM.invokeExact(dev, addr, len, targetOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int deregmem(int dev, MemorySegment addr, long len) {
        try {
            return (int) DEREGMEM.invokeExact(dev, addr, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memAlloc(int dev, long len, MemorySegment ptrOut) {
        try {
            return (int) MEM_ALLOC.invokeExact(dev, len, ptrOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memAllocUninit(int dev, long len, MemorySegment ptrOut) {
        try {
            return (int) MEM_ALLOC_UNINIT.invokeExact(dev, len, ptrOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memFree(int dev, MemorySegment ptr) {
        try {
            return (int) MEM_FREE.invokeExact(dev, ptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyToHost(int dev, MemorySegment dst, MemorySegment src, long len) {
        try {
            return (int) MEMCPY_TO_HOST.invokeExact(dev, dst, src, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyToDevice(int dev, MemorySegment dst, MemorySegment src, long len) {
        try {
            return (int) MEMCPY_TO_DEVICE.invokeExact(dev, dst, src, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int canAccessPeer(int dev, int peer) {
        try {
            return (int) CAN_ACCESS_PEER.invokeExact(dev, peer);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyPeer(int dstDev, MemorySegment dst, int srcDev, MemorySegment src, long len) {
        try {
            return (int) MEMCPY_PEER.invokeExact(dstDev, dst, srcDev, src, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int hostAllocPinned(long len, MemorySegment ptrOut) {
        try {
            return (int) HOST_ALLOC_PINNED.invokeExact(len, ptrOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int hostFreePinned(MemorySegment ptr) {
        try {
            return (int) HOST_FREE_PINNED.invokeExact(ptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyToDeviceAsync(int dev, MemorySegment dst, MemorySegment src, long len, MemorySegment stream) {
        try {
            return (int) MEMCPY_TO_DEVICE_ASYNC.invokeExact(dev, dst, src, len, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyToHostAsync(int dev, MemorySegment dst, MemorySegment src, long len, MemorySegment stream) {
        try {
            return (int) MEMCPY_TO_HOST_ASYNC.invokeExact(dev, dst, src, len, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int checkDevicePointer(int dev, MemorySegment ptr, long len) {
        try {
            return (int) CHECK_DEVICE_POINTER.invokeExact(dev, ptr, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
