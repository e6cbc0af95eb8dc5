package io.phxfs.safetensors;

import io.phxfs.core.Errno;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;


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
        if (!Libc.available()) {
            return new HostMemory(phx.host().allocate(bytes), null);
        }
        MemorySegment seg = map(bytes);
        if (seg == null) {
            throw new PhoenixException("mmap(" + bytes + " bytes of host memory for the weights)", Errno.ENOMEM);
        }
        Arena arena = Arena.ofShared();
        long len = seg.byteSize();
        MemorySegment owned = seg.reinterpret(len, arena, s -> Libc.munmap(s.address(), len));
        long aligned = ((owned.address() + HUGE - 1) & -HUGE) - owned.address();
        try {
            return new HostMemory(phx.host().wrap(owned.asSlice(aligned, bytes)), arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static MemorySegment map(long bytes) {
        long len = Math.addExact(bytes, 2 * HUGE) & -HUGE;
        MemorySegment p = Libc.mmap(MemorySegment.NULL, len, Libc.PROT_READ | Libc.PROT_WRITE,
                Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1);
        if (p != null) {
            Libc.madvise(p, len, Libc.MADV_HUGEPAGE);
        }
        return p;
    }

    RegisteredBuffer buffer() {
        return buffer;
    }

    /** Closes the buffer, then unmaps the memory; a second close does nothing. */
    @Override
    public void close() {
        buffer.close(); // throws EBUSY, leaving both open, while I/O still uses the buffer
        // the arena is closed only once: Arena.close() throws on a second call
        if (arena != null && arena.scope().isAlive()) {
            arena.close();
        }
    }
}
