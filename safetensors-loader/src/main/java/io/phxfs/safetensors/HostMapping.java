package io.phxfs.safetensors;


import io.phxfs.core.Errno;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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

    private final Arena arena;
    private final RegisteredBuffer buffer;
    private final Map<SafetensorsHeader, Long> base;

    private HostMapping(Arena arena, RegisteredBuffer buffer, Map<SafetensorsHeader, Long> base) {
        this.arena = arena;
        this.buffer = buffer;
        this.base = base;
    }

    static boolean available() {
        return Libc.available();
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
        MemorySegment region = Libc.mmap(MemorySegment.NULL, len, Libc.PROT_NONE,
                Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS | Libc.MAP_NORESERVE, -1);
        if (region == null) {
            throw new PhoenixException("mmap(reserve " + len + " bytes for the weights)", Errno.ENOMEM);
        }
        Arena arena = Arena.ofShared();
        long start = region.address();
        MemorySegment owned = region.reinterpret(len, arena, s -> Libc.munmap(start, len));
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
                    if (h.fileSize() > 0 && Libc.mmap(at, h.fileSize(), Libc.PROT_READ,
                            Libc.MAP_PRIVATE | Libc.MAP_FIXED | Libc.MAP_POPULATE, f.fd()) == null) {
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

    RegisteredBuffer buffer() {
        return buffer;
    }

    /** Where a tensor's first byte is in {@link #buffer()}. */
    long offsetOf(SafetensorsHeader file, TensorInfo t) {
        return base.get(file) + file.fileOffset(t);
    }

    /** Closes the buffer, then unmaps the files; a second close does nothing. */
    @Override
    public void close() {
        buffer.close();
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
