package io.phxfs.core;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.phxfs.core.NativeLibrary.CRITICAL;
import static io.phxfs.core.NativeLibrary.C_STRING;
import static io.phxfs.core.NativeLibrary.cString;
import static io.phxfs.core.NativeLibrary.downcall;
import static io.phxfs.core.NativeLibrary.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** phoenix.h: library set-up, devices, configuration, version. */
final class DeviceCalls {
    private static final FunctionDescriptor INT_VOID = FunctionDescriptor.of(JAVA_INT);
    private static final FunctionDescriptor INT_INT = FunctionDescriptor.of(JAVA_INT, JAVA_INT);

    private static final MethodHandle INIT = downcall("phxfs_init", INT_VOID);
    private static final MethodHandle DEVICE_COUNT = downcall("phxfs_device_count", INT_VOID);
    private static final MethodHandle OPEN = downcall("phxfs_open", INT_INT);
    private static final MethodHandle CLOSE = downcall("phxfs_close", INT_INT);
    private static final MethodHandle GET_DEVICE_INFO = downcall("phxfs_get_device_info",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle GET_PAGE_SIZE = downcall("phxfs_get_page_size",
            FunctionDescriptor.of(JAVA_LONG), CRITICAL);
    private static final MethodHandle VERSION = downcall("phxfs_version", FunctionDescriptor.of(JAVA_INT), CRITICAL);
    private static final MethodHandle GET_MAP_MODE = downcall("phxfs_get_map_mode", INT_INT);
    private static final MethodHandle SET_CONFIG = downcall("phxfs_set_config",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle GET_CONFIG = downcall("phxfs_get_config",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    private static final MethodHandle MODE_NAME = downcall("phxfs_mode_name",
            FunctionDescriptor.of(C_STRING, JAVA_INT), CRITICAL);

    private DeviceCalls() {
    }

    static int init() {
        try {
            return (int) INIT.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int deviceCount() {
        try {
            return (int) DEVICE_COUNT.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int open(int dev) {
        try {
            return (int) OPEN.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int close(int dev) {
        try {
            return (int) CLOSE.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int getDeviceInfo(int dev, MemorySegment info) {
        try {
            return (int) GET_DEVICE_INFO.invokeExact(dev, info);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int version() {
        try {
            return (int) VERSION.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long getPageSize() {
        try {
            return (long) GET_PAGE_SIZE.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int getMapMode(int dev) {
        try {
            return (int) GET_MAP_MODE.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int setConfig(MemorySegment key, MemorySegment value) {
        try {
            return (int) SET_CONFIG.invokeExact(key, value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int getConfig(MemorySegment key, MemorySegment buf, long len) {
        try {
            return (int) GET_CONFIG.invokeExact(key, buf, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static String modeName(int mode) {
        try {
            return cString((MemorySegment) MODE_NAME.invokeExact(mode));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
