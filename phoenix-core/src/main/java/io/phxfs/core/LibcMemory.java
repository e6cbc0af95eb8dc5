package io.phxfs.core;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * The libc calls behind {@link Host}'s kernel memory (file mappings, huge-page anonymous
 * memory): open, lseek, close, mmap, munmap, madvise, sysconf and strerror. Kept apart from
 * {@link NativeLibrary} because none of it needs libphoenix. Failures become
 * {@link PhoenixException}s carrying errno and its strerror text, so that a message reads
 * "mmap /models/x.safetensors: EACCES (Permission denied)". Constants are the Linux x86-64 /
 * aarch64 values, the only platforms libphoenix targets.
 */
@SuppressWarnings("restricted") // libphoenix needs native access anyway
final class LibcMemory {
    static final int PROT_NONE = 0;
    static final int PROT_READ = 1;
    static final int PROT_WRITE = 2;
    static final int MAP_PRIVATE = 2;
    static final int MAP_FIXED = 0x10;
    static final int MAP_ANONYMOUS = 0x20;
    static final int MAP_NORESERVE = 0x4000;
    static final int MAP_POPULATE = 0x8000;
    static final int MADV_HUGEPAGE = 14;
    static final int MADV_POPULATE_READ = 22; // Linux 5.14


    private static final int O_RDONLY = 0;
    private static final int O_CLOEXEC = 0x80000;
    private static final int SEEK_END = 2;
    private static final int SC_PAGESIZE = 30;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle CAPTURED_ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final AddressLayout C_STRING = ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(Integer.MAX_VALUE, JAVA_BYTE));

    /** Null when libc cannot be linked; {@link #available()} then says false. */
    private static final Handles H = Handles.link();

    private record Handles(MethodHandle open, MethodHandle lseek, MethodHandle close, MethodHandle mmap,
                           MethodHandle munmap, MethodHandle madvise, MethodHandle strerror, long pageSize) {
        static Handles link() {
            try {
                SymbolLookup libc = LINKER.defaultLookup();
                Linker.Option errno = Linker.Option.captureCallState("errno");
                MethodHandle sysconf = bind(libc, "sysconf", FunctionDescriptor.of(JAVA_LONG, JAVA_INT));
                long page = (long) sysconf.invokeExact(SC_PAGESIZE);
                return new Handles(
                        // open is variadic: the mode is passed as its one variadic int
                        bind(libc, "open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                                errno, Linker.Option.firstVariadicArg(2)),
                        bind(libc, "lseek", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), errno),
                        bind(libc, "close", FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
                        bind(libc, "mmap", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT,
                                JAVA_INT, JAVA_LONG), errno),
                        bind(libc, "munmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG)),
                        bind(libc, "madvise", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT)),
                        bind(libc, "strerror", FunctionDescriptor.of(C_STRING, JAVA_INT)),
                        page > 0 ? page : 4096);
            } catch (Throwable t) {
                return null;
            }
        }

        private static MethodHandle bind(SymbolLookup lib, String name, FunctionDescriptor fd, Linker.Option... o) {
            return LINKER.downcallHandle(lib.find(name).orElseThrow(), fd, o);
        }
    }

    private LibcMemory() {
    }

    /** Whether libc could be linked (false would mean a platform libphoenix does not run on either). */
    static boolean available() {
        return H != null;
    }

    /** The kernel's page size: mmap offsets must be multiples of it. */
    static long pageSize() {
        return handles().pageSize();
    }

    /** open(path, O_RDONLY | O_CLOEXEC); the fd, or a PhoenixException naming the path and errno. */
    static int openReadOnly(Path path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            int fd = (int) handles().open().invokeExact(capture, arena.allocateFrom(path.toString()),
                    O_RDONLY | O_CLOEXEC, 0);
            if (fd < 0) {
                throw failure("open " + path, capture);
            }
            return fd;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The size of the open file (lseek to its end). */
    static long size(int fd, Path path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            long size = (long) handles().lseek().invokeExact(capture, fd, 0L, SEEK_END);
            if (size < 0) {
                throw failure("lseek " + path, capture);
            }
            return size;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** close(2); a failure is ignored, nothing was written through a read-only fd. */
    static void close(int fd) {
        try {
            int ignored = (int) handles().close().invokeExact(fd);
        } catch (Throwable t) {
            // the descriptor is gone or leaks; either way there is nothing to report
        }
    }

    /**
     * mmap(2). Returns the mapping as a segment of {@code len} bytes with no owner; the caller
     * gives it one (an arena whose cleanup calls {@link #munmap}).
     *
     * @param what names the mapping in the failure, e.g. "mmap /models/x.safetensors"
     */
    static MemorySegment mmap(MemorySegment at, long len, int prot, int flags, int fd, long offset, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            MemorySegment p = (MemorySegment) handles().mmap().invokeExact(capture, at, len, prot, flags, fd, offset);
            if (p.address() == -1L) { // MAP_FAILED
                throw failure(what, capture);
            }
            return p.reinterpret(len);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** munmap(2), from arena cleanups, which must not throw: a failure leaves the mapping until exit. */
    static void munmap(long address, long len) {
        try {
            int ignored = (int) handles().munmap().invokeExact(MemorySegment.ofAddress(address), len);
        } catch (Throwable t) {
            // the mapping stays until the process ends
        }
    }

    /** madvise(2) as a hint; returns false when the kernel refused it (e.g. no THP support). */
    static boolean advise(MemorySegment at, long len, int advice) {
        try {
            return (int) handles().madvise().invokeExact(at, len, advice) == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    private static PhoenixException failure(String what, MemorySegment capture) {
        int errno = (int) CAPTURED_ERRNO.get(capture, 0L);
        return new PhoenixException(what, errno, strerror(errno));
    }

    /** The C library's text for errno ("Permission denied"); "" when it cannot be had. */
    static String strerror(int errno) {
        try {
            MemorySegment s = (MemorySegment) handles().strerror().invokeExact(errno);
            return s.equals(MemorySegment.NULL) ? "" : s.getString(0);
        } catch (Throwable t) {
            return "";
        }
    }

    private static Handles handles() {
        if (H == null) {
            throw new PhoenixException("libc (mmap, open) could not be linked", Errno.ENOSYS);
        }
        return H;
    }
}
