package io.phxfs.core;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Zeroed native memory from calloc, freed by {@link #close()} (once, whoever calls it): for the
 * cells libphoenix reads and writes while a batch or a stream-ordered operation runs, which
 * another thread may free. A shared arena would do the same, but closing one is a handshake
 * with every Java thread of the process: 60-150 us each on the 2-core build machine, paid on
 * every batch (a KV-tier get or put, a load). Never handed to callers: the owner checks its
 * own state before touching the memory, as the segment itself cannot tell it was freed.
 */
@SuppressWarnings("restricted") // libphoenix needs native access anyway
final class NativeBlock implements AutoCloseable {
    private static final MethodHandle CALLOC = NativeLibrary.libc("calloc",
            FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle FREE = NativeLibrary.libc("free", FunctionDescriptor.ofVoid(ADDRESS));

    private final MemorySegment segment;
    private final AtomicBoolean freed = new AtomicBoolean();

    private NativeBlock(MemorySegment segment) {
        this.segment = segment;
    }

    /**
     * {@code bytes} of zeroed memory, aligned for any scalar (calloc's guarantee: 16 bytes on
     * x86-64 and aarch64).
     *
     * @throws OutOfMemoryError when calloc refuses
     */
    static NativeBlock allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes must be > 0, was " + bytes);
        }
        MemorySegment p;
        try {
            p = (MemorySegment) CALLOC.invokeExact(1L, bytes);
        } catch (Throwable t) {
            throw new IllegalStateException("calloc", t);
        }
        if (p.equals(MemorySegment.NULL)) {
            throw new OutOfMemoryError("calloc of " + bytes + " bytes of native memory failed");
        }
        return new NativeBlock(p.reinterpret(bytes));
    }

    /** The memory; valid until {@link #close()}. */
    MemorySegment segment() {
        return segment;
    }

    /** Frees the memory; later calls do nothing. */
    @Override
    public void close() {
        if (freed.compareAndSet(false, true)) {
            try {
                FREE.invokeExact(MemorySegment.ofAddress(segment.address()));
            } catch (Throwable t) {
                throw new IllegalStateException("free", t);
            }
        }
    }
}
