package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Ranges of files mapped read-only (private) into one contiguous address range, from
 * {@link Host#map}. The bytes are the page cache's: nothing is copied, and clean pages the
 * kernel reclaims are read again on access. {@link #segment()} is read-only, so a write fails
 * in Java instead of faulting.
 *
 * <p>Each range lies at an address congruent to its file offset modulo {@value #SLOT_ALIGNMENT}
 * bytes (so that the kernel maps large page-cache folios whole), several side by side in slots
 * of that alignment; {@link #offsetOf} says where each starts. The bytes between ranges are
 * readable too (zero, or a file's neighbouring bytes within the same page).
 *
 * <p>Closing unmaps; a second close does nothing, and the segment refuses access afterwards
 * (IllegalStateException, never a fault). As with any mmap, a file that another process
 * truncates while mapped makes access past its new end fail with SIGBUS, which the JVM
 * reports as an InternalError at best: do not map files that may shrink.
 */
public final class FileMapping implements AutoCloseable {
    /** Alignment of each range's slot when several are mapped side by side. */
    static final long SLOT_ALIGNMENT = 2L << 20;

    /**
     * {@code length} bytes of {@code file} from {@code offset}; both may be arbitrary (the
     * mapping starts at the page below {@code offset}).
     *
     * @param file the file to map
     * @param offset the first byte of the range, {@code >= 0}
     * @param length the number of bytes, {@code >= 0}
     */
    public record Range(Path file, long offset, long length) {
        /**
         * Checks the range.
         *
         * @throws IllegalArgumentException for a negative offset or length
         */
        public Range {
            Objects.requireNonNull(file, "file");
            if (offset < 0 || length < 0) {
                throw new IllegalArgumentException("map " + file + ": negative offset " + offset + " or length " + length);
            }
        }
    }

    private final List<Range> ranges;
    private final long[] offsets;
    private final Arena arena;
    private final MemorySegment segment;
    private final MemorySegment reservation;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * {@code reservation}: the whole reserved region (page-aligned, writable as a segment only
     * so that madvise may take slices of it); the mapping's segment is {@code span} bytes of it
     * from {@code from}.
     */
    private FileMapping(List<Range> ranges, long[] offsets, Arena arena, MemorySegment reservation, long from, long span) {
        this.ranges = ranges;
        this.offsets = offsets;
        this.arena = arena;
        this.reservation = reservation;
        this.segment = reservation.asSlice(from, span).asReadOnly();
    }

    /** Maps {@code ranges} side by side; see {@link Host#map(List, boolean)}. */
    static FileMapping map(List<Range> ranges, boolean populate) {
        return map(List.copyOf(ranges), populate, false);
    }

    /** Maps the whole of {@code file}, its size taken from the open descriptor. */
    static FileMapping mapWhole(Path file) {
        return map(List.of(new Range(file, 0, 0)), false, true);
    }

    /**
     * Opens every file first and checks each range against the size of the open file, so
     * that no range can reach past an end of file (a page there would fault on access instead
     * of failing here); then reserves one region and maps each range over its slot.
     */
    private static FileMapping map(List<Range> requested, boolean populate, boolean whole) {
        if (requested.isEmpty()) {
            throw new IllegalArgumentException("map: no ranges");
        }
        int[] fds = new int[requested.size()];
        Arrays.fill(fds, -1);
        try {
            List<Range> rs = new ArrayList<>(requested.size());
            for (int i = 0; i < requested.size(); i++) {
                Range r = requested.get(i);
                if (Files.isDirectory(r.file())) { // open(2) accepts a directory; mmap's ENODEV would mislead
                    throw new PhoenixException("map " + r.file(), Errno.EISDIR, LibcMemory.strerror(Errno.EISDIR));
                }
                fds[i] = LibcMemory.openReadOnly(r.file());
                long size = LibcMemory.size(fds[i], r.file());
                if (whole) {
                    r = new Range(r.file(), 0, size);
                } else if (r.offset() > size || r.length() > size - r.offset()) {
                    throw new IllegalArgumentException("map " + r.file() + ": range [" + r.offset() + ", " + r.offset()
                            + "+" + r.length() + ") is past the end of the file's " + size + " bytes");
                }
                rs.add(r);
            }
            return mapOpen(List.copyOf(rs), fds, populate);
        } finally {
            for (int fd : fds) {
                if (fd >= 0) {
                    LibcMemory.close(fd); // a mapping keeps its own reference to the file
                }
            }
        }
    }

    private static FileMapping mapOpen(List<Range> rs, int[] fds, boolean populate) {
        long page = LibcMemory.pageSize();
        // Every range (one alone too) at an address congruent to its file offset modulo 2 MiB:
        // then the kernel maps a file's 2 MiB page-cache folios whole, one entry each, where a
        // merely page-aligned mapping takes one entry a 4 KiB page (populating a 2 GB file read
        // back from disk: 4 ms against 130 ms).
        long align = SLOT_ALIGNMENT;
        long[] slots = new long[rs.size()];
        long[] leads = new long[rs.size()];
        long total = 0;
        for (int i = 0; i < rs.size(); i++) {
            Range r = rs.get(i);
            long delta = r.offset() % page;
            leads[i] = (r.offset() - delta) % align;
            slots[i] = total;
            total = Math.addExact(total, roundUp(leads[i] + delta + r.length(), align));
        }
        // Reserved readable and backed by the shared zero page: the gaps between ranges read
        // as zero instead of faulting, and the reservation costs no memory.
        long reserved = Math.addExact(Math.max(total, page), align);
        MemorySegment region = LibcMemory.mmap(MemorySegment.NULL, reserved, LibcMemory.PROT_READ,
                LibcMemory.MAP_PRIVATE | LibcMemory.MAP_ANONYMOUS | LibcMemory.MAP_NORESERVE, -1, 0,
                "mmap (reserve " + reserved + " bytes to map " + rs.get(0).file() + (rs.size() > 1 ? " and others" : "") + ")");
        long start = region.address();
        Arena arena = Arena.ofShared();
        MemorySegment owned = region.reinterpret(reserved, arena, s -> LibcMemory.munmap(start, reserved));
        try {
            long base = roundUp(start, align) - start;
            long delta0 = leads[0] + rs.get(0).offset() % page;
            long[] offsets = new long[rs.size()];
            // where the kernel cannot populate stepwise (before 5.14), MAP_POPULATE as before
            int flags = LibcMemory.MAP_PRIVATE | LibcMemory.MAP_FIXED
                    | (populate && !stepwiseSupported() ? LibcMemory.MAP_POPULATE : 0);
            for (int i = 0; i < rs.size(); i++) {
                Range r = rs.get(i);
                long delta = r.offset() % page; // mmap offsets are whole pages
                if (r.length() > 0) {
                    MemorySegment at = MemorySegment.ofAddress(start + base + slots[i] + leads[i]);
                    LibcMemory.mmap(at, delta + r.length(), LibcMemory.PROT_READ, flags, fds[i], r.offset() - delta,
                            "mmap " + r.file());
                }
                offsets[i] = slots[i] + leads[i] + delta - delta0;
            }
            Range last = rs.get(rs.size() - 1);
            long span = offsets[rs.size() - 1] + last.length();
            FileMapping m = new FileMapping(rs, offsets, arena, owned, base + delta0, span);
            if (populate && stepwiseSupported()) {
                m.populate();
            }
            return m;
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** Pages populated per madvise call: the process's address-space lock is free in between. */
    private static final long POPULATE_STEP = 64L << 20;

    /** Whether the kernel knows MADV_POPULATE_READ (5.14+), asked once of an anonymous page. */
    private static final class Stepwise {
        static final boolean SUPPORTED = probe();

        private static boolean probe() {
            long page = LibcMemory.pageSize();
            MemorySegment p;
            try {
                p = LibcMemory.mmap(MemorySegment.NULL, page, LibcMemory.PROT_READ,
                        LibcMemory.MAP_PRIVATE | LibcMemory.MAP_ANONYMOUS | LibcMemory.MAP_NORESERVE, -1, 0,
                        "mmap (one page, to ask the kernel for MADV_POPULATE_READ)");
            } catch (RuntimeException e) {
                return false; // no page to ask with (ENOMEM now): MAP_POPULATE, which always works
            }
            try {
                return LibcMemory.advise(p, page, LibcMemory.MADV_POPULATE_READ);
            } finally {
                LibcMemory.munmap(p.address(), page);
            }
        }
    }

    private static boolean stepwiseSupported() {
        return Stepwise.SUPPORTED;
    }

    private static long roundUp(long v, long align) {
        return Math.addExact(v, align - 1) / align * align;
    }

    /**
     * Faults every page of the ranges in now, as {@link Host#map(List, boolean)} with
     * {@code populate} does, but 64 MiB at a time (MADV_POPULATE_READ): MAP_POPULATE holds the
     * process's mmap lock for a whole file, and a 2 GB file kept every other thread's mmap,
     * mprotect and munmap (the JVM's heap growth and JIT among them) waiting for 0.2 s. So a
     * thread can map the files, hand the mapping on (its addresses are final) and populate it
     * while others work. Pages of a cold file are read from disk. A range that fails (a file
     * truncated meanwhile) is left to the access that meets it, as MAP_POPULATE leaves it, and
     * nothing here touches the memory itself. On a kernel before 5.14, which lacks the advice,
     * this does nothing and pages fault in on first access. A close while a step's madvise is
     * under way fails with EBUSY (the mapping stays); populating a closed mapping does nothing.
     *
     * <p>Once a step is slow, other threads take steps too (up to three, and one a processor).
     * How long populating takes depends on the folios the page cache holds the files in: a file
     * read back in large reads sits in 2 MiB folios, one page-table entry each, while one
     * written by its writer, or read from disk by several threads in pieces, mostly sits in
     * 4 KiB ones; 2 GB of those took 250-290 ms to populate on the build machine against 1-3 ms
     * (phoenix-native/tests/probe/cache_fill.c, docs/benchmarks.md). Up to four threads populate:
     * on the H200 host a file as safetensors wrote it took 82-184 ms with one, 37-53 ms with four
     * and 89-117 ms with sixteen (they contend for the address space's locks). A step of large
     * folios (about 0.05 ms) starts no helper.
     */
    public void populate() {
        populate(POPULATE_STEP, SLOW_STEP_NANOS);
    }

    /**
     * {@link #populate()} in steps of {@code step} bytes, with helpers after a step slower than
     * {@code slowStepNanos}; returns how many helper threads ran.
     */
    int populate(long step, long slowStepNanos) {
        if (!stepwiseSupported()) {
            return 0;
        }
        long[] steps = populateSteps(step);
        AtomicInteger next = new AtomicInteger();
        int helpers = Math.min(steps.length / 2 - 1, Math.min(MAX_POPULATE_HELPERS, Runtime.getRuntime().availableProcessors() - 1));
        // sized up front: adding a started thread must not fail (an unjoined helper could still
        // be populating after this returns)
        List<Thread> started = new ArrayList<>(Math.max(helpers, 0));
        boolean helped = helpers <= 0;
        while (true) {
            long t0 = System.nanoTime();
            if (!populateNext(steps, next)) {
                break;
            }
            // any slow step, not only the first: a file can hold large folios in one part and
            // small ones in another (st-moe on the H200 gained 9 ms of its 112 when only a slow
            // first step brought helpers in)
            if (!helped && System.nanoTime() - t0 > slowStepNanos) {
                helped = true;
                for (int i = 0; i < helpers; i++) {
                    Thread t;
                    try {
                        t = Thread.ofPlatform().daemon().name("phoenix-populate").start(() -> {
                            while (populateNext(steps, next)) {
                                // one step a turn, until none is left
                            }
                        });
                    } catch (OutOfMemoryError | RuntimeException noThread) {
                        break; // the threads already started, and this one, take the rest
                    }
                    started.add(t);
                }
            }
        }
        boolean interrupted = false;
        for (Thread t : started) {
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the pages must be in before this returns: wait, then tell
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return started.size();
    }

    /** Populating: a step slower than this (64 MiB at 134 GB/s) brings in helpers. */
    private static final long SLOW_STEP_NANOS = 500_000;
    /** At most this many threads help populate, besides the caller (see {@link #populate}). */
    private static final int MAX_POPULATE_HELPERS = 3;

    /**
     * The populate steps in order, as pairs (offset in the reservation, length): each range in
     * steps of {@code step} bytes, from the page that holds its first byte (madvise takes whole
     * pages, and that page is mapped from the file too, since mmap offsets are whole pages).
     */
    private long[] populateSteps(long step) {
        long page = LibcMemory.pageSize();
        long base = segment.address() - reservation.address(); // the segment's start in the reservation
        int count = 0;
        long[] steps = new long[16];
        for (int i = 0; i < ranges.size(); i++) {
            long first = base + offsets[i];
            long end = first + ranges.get(i).length();
            for (long off = first - (reservation.address() + first) % page; off < end; off += step) {
                if (count + 2 > steps.length) {
                    steps = Arrays.copyOf(steps, steps.length * 2);
                }
                steps[count++] = off;
                steps[count++] = Math.min(step, end - off);
            }
        }
        return Arrays.copyOf(steps, count);
    }

    /** Populates the next step not yet taken; false when none is left or the mapping is closed. */
    private boolean populateNext(long[] steps, AtomicInteger next) {
        int i = next.getAndIncrement();
        if (i >= steps.length / 2 || closed.get()) {
            return false;
        }
        MemorySegment step;
        try {
            // a slice of the arena's segment: the downcall keeps the mapping alive while it runs
            step = reservation.asSlice(steps[2 * i], steps[2 * i + 1]);
        } catch (IllegalStateException closedMeanwhile) {
            return false;
        }
        // false: EFAULT (truncated), left to the access that meets it
        LibcMemory.advise(step, step.byteSize(), LibcMemory.MADV_POPULATE_READ);
        return true;
    }

    /**
     * The mapped bytes, read-only: the first range from index 0, the others at
     * {@link #offsetOf}. Access after {@link #close()} throws IllegalStateException.
     *
     * @throws IllegalStateException when closed
     * @return the read-only segment over every range
     */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    /**
     * Where range {@code index}'s first byte is in {@link #segment()} (0 for the first range).
     *
     * @param index the range's position in {@link #ranges()}
     * @return the offset, in bytes, of the range in the segment
     */
    public long offsetOf(int index) {
        Objects.checkIndex(index, offsets.length);
        return offsets[index];
    }

    /**
     * The ranges, in the order given.
     *
     * @return the ranges, unmodifiable
     */
    public List<Range> ranges() {
        return ranges;
    }

    /**
     * Bytes of {@link #segment()}: all ranges and the gaps between them.
     *
     * @return the segment's size in bytes
     */
    public long byteSize() {
        return segment.byteSize();
    }

    /**
     * Whether {@link #close()} has unmapped the files.
     *
     * @return true once the mapping is closed
     */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Unmaps the files; a second close does nothing.
     *
     * @throws PhoenixException EBUSY while a native call on another thread still uses the
     *                          segment (the mapping then stays, and close may be retried)
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            arena.close();
        } catch (IllegalStateException e) {
            closed.set(false);
            throw new PhoenixException("close " + this + ": segment in use", Errno.EBUSY, e.getMessage());
        }
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public String toString() {
        return "FileMapping[" + ranges.get(0).file() + (ranges.size() > 1 ? " and " + (ranges.size() - 1) + " more" : "")
                + ", " + segment.byteSize() + " bytes]";
    }
}
