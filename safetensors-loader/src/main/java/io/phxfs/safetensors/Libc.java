package io.phxfs.safetensors;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/** mmap, munmap and madvise from the C library, for the host-memory strategies. */
final class Libc {
    static final int PROT_NONE = 0;
    static final int PROT_READ = 1;
    static final int PROT_WRITE = 2;
    static final int MAP_PRIVATE = 2;
    static final int MAP_FIXED = 0x10;
    static final int MAP_ANONYMOUS = 0x20;
    static final int MAP_NORESERVE = 0x4000;
    static final int MAP_POPULATE = 0x8000;
    static final int MADV_HUGEPAGE = 14;

    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MADVISE;

    static {
        MethodHandle[] h = link();
        MMAP = h[0];
        MUNMAP = h[1];
        MADVISE = h[2];
    }

    private Libc() {}

    /** All null when libc cannot be linked: callers then fall back to what Phoenix offers. */
    @SuppressWarnings("restricted") // libphoenix needs native access anyway
    private static MethodHandle[] link() {
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            return new MethodHandle[] {
                linker.downcallHandle(libc.find("mmap").orElseThrow(),
                        FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG)),
                linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG)),
                linker.downcallHandle(libc.find("madvise").orElseThrow(),
                        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT))};
        } catch (RuntimeException | Error e) {
            return new MethodHandle[3];
        }
    }

    static boolean available() {
        return MMAP != null;
    }

    /** mmap; null when it fails. The segment has length {@code len} and no owner. */
    @SuppressWarnings("restricted")
    static MemorySegment mmap(MemorySegment at, long len, int prot, int flags, int fd) {
        try {
            MemorySegment p = (MemorySegment) MMAP.invokeExact(at, len, prot, flags, fd, 0L);
            return p.address() == -1L || p.address() == 0 ? null : p.reinterpret(len);
        } catch (Throwable t) {
            return null;
        }
    }

    /** madvise, as a hint: failure is ignored. */
    static void madvise(MemorySegment at, long len, int advice) {
        try {
            int ignored = (int) MADVISE.invokeExact(at, len, advice);
        } catch (Throwable t) {
            // only a hint
        }
    }

    static void munmap(long address, long len) {
        try {
            int ignored = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), len);
        } catch (Throwable t) {
            // the mapping stays until the process ends
        }
    }
}
