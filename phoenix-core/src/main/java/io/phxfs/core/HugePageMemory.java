package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Host memory taken with an anonymous mmap and advised into transparent huge pages, for
 * {@link Host#allocateHuge}. Java's own allocation zero-fills on one thread, touching every
 * page before I/O starts, which for multi-GB buffers costs as much as the I/O; anonymous
 * pages arrive zeroed from the kernel when the I/O workers first write them, in parallel,
 * and 2 MiB pages make those faults 512 times rarer.
 */
final class HugePageMemory {
    static final long HUGE_PAGE = 2L << 20;

    private HugePageMemory() {
    }

    /**
     * One anonymous mapping: {@code len} bytes from {@code start}, of which {@code capacity}
     * bytes from the 2 MiB boundary {@code start + skip} are usable.
     */
    record Mapping(long start, long len, long skip, long capacity) {
        void unmap() {
            LibcMemory.munmap(start, len);
        }
    }

    /** {@code bytes} of zeroed, 2 MiB-aligned memory; closing the buffer unmaps it. */
    static RegisteredBuffer allocate(long bytes) {
        Mapping m = map(bytes);
        return wrap(m, bytes, m::unmap);
    }

    /** A fresh mapping of at least {@code bytes} usable bytes, advised into huge pages. */
    static Mapping map(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocateHuge: bytes must be > 0, was " + bytes);
        }
        long rounded = Math.addExact(bytes, HUGE_PAGE - 1) & -HUGE_PAGE;
        long len = Math.addExact(rounded, HUGE_PAGE); // slack to align the start
        MemorySegment p = LibcMemory.mmap(MemorySegment.NULL, len, LibcMemory.PROT_READ | LibcMemory.PROT_WRITE,
                LibcMemory.MAP_PRIVATE | LibcMemory.MAP_ANONYMOUS, -1, 0,
                "mmap (" + bytes + " bytes of anonymous host memory)");
        long start = p.address();
        long aligned = ((start + HUGE_PAGE - 1) & -HUGE_PAGE) - start;
        // Refused where THP is compiled out or set to "never": the memory then simply has
        // normal pages, which is correct, only slower to fault in.
        LibcMemory.advise(p.asSlice(aligned, rounded), rounded, LibcMemory.MADV_HUGEPAGE);
        return new Mapping(start, len, aligned, rounded);
    }

    /** A buffer of {@code bytes} over {@code m}; {@code onClose} runs when the buffer closes. */
    @SuppressWarnings("restricted") // the mapping is exactly m.len() bytes from m.start()
    static RegisteredBuffer wrap(Mapping m, long bytes, Runnable onClose) {
        Arena arena = Arena.ofShared();
        MemorySegment owned = MemorySegment.ofAddress(m.start()).reinterpret(m.len(), arena, s -> onClose.run());
        try {
            return RegisteredBuffer.hostOwned(arena, owned.asSlice(m.skip(), bytes));
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }
}
