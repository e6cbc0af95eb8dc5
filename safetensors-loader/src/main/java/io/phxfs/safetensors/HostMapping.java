package io.phxfs.safetensors;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.phxfs.core.Errno;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Host "loading" of page-cache-warm files without a copy: one address range is reserved and
 * every file is mapped into it read-only and populated (MAP_POPULATE), so tensors are views
 * of the page cache. Copying into fresh memory must fault in and zero every page first, which
 * costs more than the copy (on the 2-core build VM: 0.3 s per GB against 13 ms to map it);
 * mapping costs only the page-table entries. The views are read-only: a write through them
 * fails in Java rather than faulting. Clean file pages can be reclaimed under memory pressure
 * and are then read again on access, as with any mmap'd model.
 */
final class HostMapping implements AutoCloseable {
    private static final long PAGE = 2L << 20; // files start on 2 MiB boundaries
    private static final int PROT_NONE = 0;
    private static final int PROT_READ = 1;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_FIXED = 0x10;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MAP_NORESERVE = 0x4000;
    private static final int MAP_POPULATE = 0x8000;

    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;

    static {
        MethodHandle[] h = libc();
        MMAP = h[0];
        MUNMAP = h[1];
    }

    @SuppressWarnings("restricted")
    private static MethodHandle[] libc() {
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            return new MethodHandle[] {
                linker.downcallHandle(libc.find("mmap").orElseThrow(),
                        FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG)),
                linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG))};
        } catch (RuntimeException | Error e) {
            return new MethodHandle[2];
        }
    }

    private final Arena arena;
    private final RegisteredBuffer buffer;
    private final Map<SafetensorsHeader, Long> base;

    private HostMapping(Arena arena, RegisteredBuffer buffer, Map<SafetensorsHeader, Long> base) {
        this.arena = arena;
        this.buffer = buffer;
        this.base = base;
    }

    static boolean available() {
        return MMAP != null;
    }

    /** Maps {@code files} side by side. */
    @SuppressWarnings("restricted")
    static HostMapping map(Phoenix phx, List<SafetensorsHeader> files) {
        long total = 0;
        Map<SafetensorsHeader, Long> base = new IdentityHashMap<>();
        for (SafetensorsHeader h : files) {
            base.put(h, total);
            total = Math.addExact(total, (h.fileSize() + PAGE - 1) & -PAGE);
        }
        long len = total + PAGE; // slack to align the start
        MemorySegment region = mmap(MemorySegment.NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
        if (region == null) {
            throw new PhoenixException("mmap(reserve " + len + " bytes for the weights)", Errno.ENOMEM);
        }
        Arena arena = Arena.ofShared();
        long start = region.address();
        MemorySegment owned = region.reinterpret(len, arena, s -> unmap(start, len));
        try {
            long aligned = ((start + PAGE - 1) & -PAGE) - start;
            for (SafetensorsHeader h : files) {
                MemorySegment at = MemorySegment.ofAddress(start + aligned + base.get(h));
                try (PhxFile f = PhxFile.open(h.file(), OpenMode.READ)) {
                    // a page past the end of a shrunken file would fault on access, not fail a read
                    if (f.size() != h.fileSize()) {
                        throw new PhoenixException(h.file() + ": size is " + f.size() + " bytes, the header parsed earlier implied "
                                + h.fileSize() + " (did the file shrink or grow?)", Errno.EIO);
                    }
                    if (h.fileSize() > 0 && mmap(at, h.fileSize(), PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, f.fd()) == null) {
                        throw new PhoenixException("mmap(" + h.file() + ")", Errno.ENOMEM);
                    }
                }
            }
            RegisteredBuffer buf = phx.host().wrap(owned.asSlice(aligned, Math.max(total, 1)).asReadOnly());
            return new HostMapping(arena, buf, base);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static MemorySegment mmap(MemorySegment at, long len, int prot, int flags, int fd) {
        try {
            MemorySegment p = (MemorySegment) MMAP.invokeExact(at, len, prot, flags, fd, 0L);
            return p.address() == -1L || p.address() == 0 ? null : p;
        } catch (Throwable t) {
            return null;
        }
    }

    private static void unmap(long address, long len) {
        try {
            int ignored = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), len);
        } catch (Throwable t) {
            // the mapping stays until the process ends
        }
    }

    RegisteredBuffer buffer() {
        return buffer;
    }

    /** Where a tensor's first byte is in {@link #buffer()}. */
    long offsetOf(SafetensorsHeader file, TensorInfo t) {
        return base.get(file) + file.fileOffset(t);
    }

    @Override
    public void close() {
        buffer.close();
        arena.close();
    }
}
