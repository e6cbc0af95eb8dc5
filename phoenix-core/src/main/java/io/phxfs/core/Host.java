package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * Plain host memory, device id -1: libphoenix reads and writes it directly, no registration.
 * Obtain it from {@link Phoenix#host()}.
 */
public final class Host {
    /** Alignment of {@link #allocate} buffers: enough for O_DIRECT on every common file system. */
    public static final long ALIGNMENT = 4096;

    Host() {
    }

    /**
     * Device id of host memory.
     *
     * @return -1, the id libphoenix gives host memory
     */
    public int id() {
        return -1;
    }

    /**
     * Page-aligned native memory, zero-filled; closing the buffer frees it.
     *
     * @param bytes the size to allocate, {@code > 0}
     * @return a buffer that owns the memory
     */
    public RegisteredBuffer allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocate: bytes must be > 0, was " + bytes);
        }
        Arena arena = Arena.ofShared();
        try {
            return RegisteredBuffer.hostOwned(arena, arena.allocate(bytes, ALIGNMENT));
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Uses the caller's native segment as an I/O buffer. The caller keeps the memory alive
     * until the buffer and every operation on it are done; closing the buffer frees nothing.
     *
     * @param segment a native segment; heap segments are refused
     * @return a buffer over {@code segment}
     */
    public RegisteredBuffer wrap(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("wrap: a heap segment has no stable address; use a native segment");
        }
        return RegisteredBuffer.hostWrapped(segment);
    }

    @Override
    public String toString() {
        return "Host[-1]";
    }

    // ---- memory from the kernel: file mappings and huge-page anonymous memory ------------

    /**
     * Maps {@code length} bytes of {@code file} from {@code offset} read-only (a private
     * mapping: the page cache's bytes, no copy). Offset and length need no alignment. Pages
     * are faulted in on first access.
     *
     * @throws IllegalArgumentException when the range is negative or reaches past the end of the file
     * @throws PhoenixException         when the file cannot be opened or mapped; the message names
     *                                  the file and the OS reason, e.g.
     *                                  {@code "open /m/x.safetensors: EACCES (Permission denied)"}
     * @param file the file to map
     * @param offset the first byte to map
     * @param length the number of bytes to map
     * @return the mapping; closing it unmaps the file
     */
    public FileMapping map(Path file, long offset, long length) {
        return FileMapping.map(List.of(new FileMapping.Range(file, offset, length)), false);
    }

    /**
     * Maps the whole of {@code file} read-only; see {@link #map(Path, long, long)}.
     *
     * @throws PhoenixException when the file cannot be opened or mapped
     * @param file the file to map
     * @return the mapping; closing it unmaps the file
     */
    public FileMapping map(Path file) {
        return FileMapping.mapWhole(file);
    }

    /**
     * Maps several file ranges side by side into one address range, each at an address
     * congruent to its file offset modulo 2 MiB ({@link FileMapping#offsetOf} says where), so
     * that one segment or buffer covers all of them (a sharded model's files, say) and the
     * kernel can map large page-cache folios whole.
     *
     * @param populate true to fault every page in now, as {@link FileMapping#populate} does (reads
     *                 cold files from disk before returning); false to fault pages in on first
     *                 access, or populate later
     * @throws IllegalArgumentException when {@code ranges} is empty or a range reaches past the end of its file
     * @throws PhoenixException         when a file cannot be opened or mapped (message names file and reason)
     * @param ranges the file ranges to map, in order
     * @return one mapping over all ranges; closing it unmaps them
     */
    public FileMapping map(List<FileMapping.Range> ranges, boolean populate) {
        return FileMapping.map(ranges, populate);
    }

    /**
     * Zero-filled host memory of {@code bytes}, 2 MiB-aligned, from an anonymous mmap advised
     * into transparent huge pages. Unlike {@link #allocate}, nothing is touched up front: pages
     * are faulted in (zeroed by the kernel) where I/O first writes them, by the I/O workers in
     * parallel. Where transparent huge pages are unavailable (compiled out, or set to "never")
     * the memory silently has normal pages: the same bytes, only more page faults. Closing the
     * buffer unmaps it.
     *
     * @throws IllegalArgumentException when {@code bytes <= 0}
     * @throws PhoenixException         ENOMEM (or another errno) when the kernel refuses the mapping
     * @param bytes the size to allocate, {@code > 0}
     * @return a buffer that owns the memory
     */
    public RegisteredBuffer allocateHuge(long bytes) {
        if (!LibcMemory.available()) {
            return allocate(bytes);
        }
        return HugePageMemory.allocate(bytes);
    }

    /**
     * A pool of host memory that is reused after its buffers close, keeping at most
     * {@code maxBytes} of closed buffers' mappings: loads into host memory after the first
     * then copy into memory already faulted in. The caller owns the pool and closes it.
     * Without libc access (a JVM that refuses the downcalls) it is unavailable.
     *
     * @param maxBytes the most bytes of closed buffers the pool keeps, {@code >= 0}
     * @return a new, empty pool
     * @throws UnsupportedOperationException when anonymous mappings are unavailable
     */
    public HostMemoryPool pool(long maxBytes) {
        if (!LibcMemory.available()) {
            throw new UnsupportedOperationException("host memory pool: libc mmap is unavailable");
        }
        return new HostMemoryPool(maxBytes);
    }

    /**
     * Pinned (page-locked, accelerator-registered) host memory for the caller's own
     * asynchronous copies ({@link DeviceStream#copyToDevice}, {@link DeviceStream#copyToHost});
     * outside the devices' pinned pools. On a machine without an accelerator it is ordinary
     * page-aligned memory. The buffer owns it: closing frees it (phxfs_host_free_pinned).
     *
     * @param bytes the size to allocate, {@code > 0}
     * @return a buffer that owns the pinned memory
     */
    public RegisteredBuffer allocatePinned(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocatePinned: bytes must be > 0, was " + bytes);
        }
        MemorySegment ptr;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(java.lang.foreign.ValueLayout.ADDRESS);
            int rc = MemoryCalls.hostAllocPinned(bytes, out);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_host_alloc_pinned(" + bytes + " bytes)", rc);
            }
            ptr = out.get(java.lang.foreign.ValueLayout.ADDRESS, 0);
        }
        try {
            return RegisteredBuffer.hostPinned(ptr, bytes);
        } catch (RuntimeException | Error e) {
            MemoryCalls.hostFreePinned(ptr);
            throw e;
        }
    }
}
