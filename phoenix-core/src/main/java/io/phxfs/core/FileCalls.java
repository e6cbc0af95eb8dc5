package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.phxfs.core.NativeLibrary.CAPTURE_ERRNO;
import static io.phxfs.core.NativeLibrary.CAPTURE_LAYOUT;
import static io.phxfs.core.NativeLibrary.captured;
import static io.phxfs.core.NativeLibrary.downcall;
import static io.phxfs.core.NativeLibrary.libc;
import static io.phxfs.core.NativeLibrary.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** phoenix.h's file calls, plus the libc calls it leaves to the caller (close, lseek). */
final class FileCalls {
    private static final MethodHandle FILE_OPEN = downcall("phxfs_file_open",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle FILE_CACHED = downcall("phxfs_file_cached_permille",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle LIBC_CLOSE = libc("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT),
            CAPTURE_ERRNO);
    private static final MethodHandle LIBC_LSEEK = libc("lseek",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), CAPTURE_ERRNO);

    private FileCalls() {
    }

    static int fileOpen(MemorySegment path, int flags, int mode, int wantDirect, MemorySegment isDirectOut) {
        try {
            return (int) FILE_OPEN.invokeExact(path, flags, mode, wantDirect, isDirectOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int fileCachedPermille(int fd) {
        try {
            return (int) FILE_CACHED.invokeExact(fd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** close(2); returns 0 or -errno. */
    static int closeFd(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            int rc = (int) LIBC_CLOSE.invokeExact(capture, fd);
            return rc == 0 ? 0 : -captured(capture);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** lseek(fd, 0, SEEK_END): the size of the open file, or -errno. */
    static long fileSize(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            long rc = (long) LIBC_LSEEK.invokeExact(capture, fd, 0L, 2 /* SEEK_END */);
            return rc >= 0 ? rc : -captured(capture);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
