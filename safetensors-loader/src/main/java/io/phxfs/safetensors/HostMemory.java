package io.phxfs.safetensors;

import io.phxfs.core.Errno;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Host memory for loaded weights, taken with an anonymous mmap instead of
 * {@code Host.allocate}: Java zero-fills what it allocates, one thread touching every page
 * before a single byte is read, which for a multi-GB model costs as much as the load itself.
 * Anonymous pages arrive zeroed from the kernel when the I/O workers first write them, in
 * parallel, and transparent huge pages (asked for with madvise) make those faults 512 times
 * rarer. Where mmap cannot be linked, {@code Host.allocate} is used.
 */
final class HostMemory implements AutoCloseable {
    private static final long HUGE = 2L << 20;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MADV_HUGEPAGE = 14;

    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MADVISE;

    static {
        MethodHandle[] h = libc();
        MMAP = h[0];
        MUNMAP = h[1];
        MADVISE = h[2];
    }

    /** mmap, munmap and madvise; all null when libc cannot be linked (then Host.allocate serves). */
    @SuppressWarnings("restricted") // libphoenix needs native access anyway
    private static MethodHandle[] libc() {
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

    private final RegisteredBuffer buffer;
    private final Arena arena;

    private HostMemory(RegisteredBuffer buffer, Arena arena) {
        this.buffer = buffer;
        this.arena = arena;
    }

    /**
     * Zeroed, 2 MiB-aligned host memory of {@code bytes} as an I/O buffer.
     *
     * @throws PhoenixException ENOMEM when the kernel refuses the mapping
     */
    @SuppressWarnings("restricted")
    static HostMemory allocate(Phoenix phx, long bytes) {
        if (MMAP == null) {
            return new HostMemory(phx.host().allocate(bytes), null);
        }
        MemorySegment seg = map(bytes);
        if (seg == null) {
            throw new PhoenixException("mmap(" + bytes + " bytes of host memory for the weights)", Errno.ENOMEM);
        }
        Arena arena = Arena.ofShared();
        long len = seg.byteSize();
        MemorySegment owned = seg.reinterpret(len, arena, s -> unmap(s.address(), len));
        long aligned = ((owned.address() + HUGE - 1) & -HUGE) - owned.address();
        try {
            return new HostMemory(phx.host().wrap(owned.asSlice(aligned, bytes)), arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    @SuppressWarnings("restricted")
    private static MemorySegment map(long bytes) {
        try {
            long len = Math.addExact(bytes, 2 * HUGE) & -HUGE;
            MemorySegment p = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
            if (p.address() == -1L || p.address() == 0) {
                return null;
            }
            int ignored = (int) MADVISE.invokeExact(p, len, MADV_HUGEPAGE); // only a hint; fine to fail
            return p.reinterpret(len);
        } catch (Throwable t) {
            return null;
        }
    }

    private static void unmap(long address, long len) {
        try {
            int ignored = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), len);
        } catch (Throwable t) {
            // nothing to do: the mapping stays until the process ends
        }
    }

    RegisteredBuffer buffer() {
        return buffer;
    }

    /** Closes the buffer, then unmaps the memory. */
    @Override
    public void close() {
        buffer.close();
        if (arena != null) {
            arena.close();
        }
    }
}
