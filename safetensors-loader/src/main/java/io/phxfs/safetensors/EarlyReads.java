package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.LoadBatch.Read;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The reads of a load into one target, submitted before its headers are parsed: one
 * request series per file over the whole data section, exactly what {@link ReadPlan}
 * makes of a file whose tensors tile it. Owns its buffer until {@link #finish} hands it
 * to the model; {@link #abandon} waits for the reads and frees it.
 */
final class EarlyReads {
    private final int target;
    private final Device device;
    private final RegisteredBuffer buffer;
    private final List<Read> reads;
    /** The reads' extent in the buffer (from 0), which the plan must match; the buffer may be larger. */
    private final long readBytes;
    private final LoadBatch batch;
    private final long allocateNanos;
    private final LoadedModel.AllocateSplit allocateSplit;
    private final long readStart;

    private EarlyReads(int target, Device device, RegisteredBuffer buffer, List<Read> reads,
                       long readBytes, LoadBatch batch, long allocateNanos, LoadedModel.AllocateSplit allocateSplit,
                       long readStart) {
        this.target = target;
        this.device = device;
        this.buffer = buffer;
        this.reads = reads;
        this.readBytes = readBytes;
        this.batch = batch;
        this.allocateNanos = allocateNanos;
        this.allocateSplit = allocateSplit;
        this.readStart = readStart;
    }

    /** One request of the early reads: where in which file, how much of it must arrive, where in the buffer. */
    private record Slot(Path file, long fileOffset, long length, long needed, long bufferOffset) {
    }

    /** The requests over every file's data section, laid end to end from buffer offset 0, and their extent. */
    private record Layout(List<Slot> slots, long bytes) {
        /** Null when a file's header length or size is off (the parse then says what is wrong). */
        static Layout of(List<Path> files, long alignment, long maxRequest, long maxHeaderBytes) {
            List<Slot> slots = new ArrayList<>();
            long a = alignment;
            long cursor = 0;
            for (Path f : files) {
                long[] extent = dataExtent(f, maxHeaderBytes);
                if (extent == null) {
                    return null;
                }
                long start = extent[0];
                long end = extent[1];
                if (end == start) {
                    continue;
                }
                long alignedStart = start & -a;
                long length = ((end + a - 1) & -a) - alignedStart;
                for (long off = 0; off < length; off += maxRequest) {
                    long len = Math.min(maxRequest, length - off);
                    long needed = Math.max(0, Math.min(len, end - (alignedStart + off)));
                    slots.add(new Slot(f, alignedStart + off, len, needed, cursor + off));
                }
                cursor += length;
            }
            return new Layout(slots, cursor);
        }
    }

    /** The reads started, or null when this load cannot start early (the normal path then runs). */
    static EarlyReads start(WeightLoader loader, ModelFiles.Located located) {
        long begin = System.nanoTime(); // sizes, device, allocation, extents, files: the load's allocate phase
        Integer target = loader.earlyTarget();
        if (target == null) {
            return null;
        }
        long a = loader.options.alignment();
        // The destination is allocated from the files' sizes, before their data sections are
        // known: a file's reads span at most its size rounded up to the alignment, so the buffer
        // is larger than the reads by about the headers (kilobytes; a megabyte for thousands of
        // tensors), and the allocation (0.8-1.0 ms for 5 GB on the H200) runs while the extents
        // are read and the files opened.
        long upper = 0;
        for (Path f : located.files()) {
            long size = regularFileSize(f);
            if (size < 0) {
                return null; // the parse says what is wrong with it
            }
            upper += (size + a - 1) & -a;
        }
        if (upper == 0) {
            return null;
        }
        Phoenix phx = Phoenix.open();
        Device device;
        try {
            device = target == Placement.HOST ? null : phx.device(target);
        } catch (RuntimeException e) {
            return null; // the usual path reports it
        }
        // the allocation runs on a virtual thread (a device call: its own context)
        long bytes = upper;
        long[] allocTimes = new long[2]; // read after the FutureTask's get, which publishes them
        java.util.concurrent.FutureTask<RegisteredBuffer> alloc = new java.util.concurrent.FutureTask<>(() -> {
            allocTimes[0] = System.nanoTime();
            RegisteredBuffer b = device == null ? loader.placed.hostBuffer(phx, bytes) : device.allocateUninitialized(bytes);
            allocTimes[1] = System.nanoTime();
            return b;
        });
        try {
            Thread.ofVirtual().name("phoenix-early-allocate").start(alloc);
        } catch (RuntimeException | OutOfMemoryError e) {
            return null; // nothing allocated: the usual path runs
        }
        long tThread = System.nanoTime();
        Map<Path, io.phxfs.core.PhxFile> files = null;
        RegisteredBuffer buffer = null;
        try {
            Layout layout;
            long tExtents;
            long tOpened;
            try {
                layout = Layout.of(located.files(), a, loader.options.maxRequestBytes(), loader.parser.maxHeaderBytes());
                tExtents = System.nanoTime();
                if (layout != null && (layout.bytes() == 0 || layout.bytes() > bytes)) {
                    layout = null; // no data, or a file grew since its size was taken: the usual path
                }
                if (layout != null) {
                    List<Path> paths = new ArrayList<>(layout.slots().size());
                    for (Slot s : layout.slots()) {
                        paths.add(s.file());
                    }
                    // the files open (and tell how much of each is cached) while the destination
                    // is allocated: on the H200 each took about 0.15 ms of a fresh JVM's time
                    files = loader.runner.openFiles(paths);
                }
                tOpened = System.nanoTime();
            } finally {
                buffer = Uninterruptibly.get(alloc); // also when this failed or gave up: freed below
            }
            if (layout == null) {
                throw new IllegalStateException("no early reads"); // frees the buffer below; the usual path runs
            }
            long tAllocated = System.nanoTime();
            List<Read> reads = new ArrayList<>(layout.slots().size());
            for (Slot s : layout.slots()) {
                // fresh host memory is zeroed already; device and pooled memory are not
                boolean zeroTail = device != null || loader.hostPool != null;
                reads.add(new Read(s.file(), buffer, s.bufferOffset(), s.fileOffset(), s.length(), s.needed(), zeroTail));
            }
            long readStart = System.nanoTime();
            Map<Path, io.phxfs.core.PhxFile> owned = files;
            files = null; // the batch owns them now, also if it fails
            LoadBatch batch = loader.runner.batch(reads, owned);
            try {
                batch.start();
            } catch (RuntimeException | Error e) {
                batch.close();
                throw e;
            }
            LoadedModel.AllocateSplit split = new LoadedModel.AllocateSplit((tExtents - tThread) / 1e9,
                    (tOpened - tExtents) / 1e9, (tAllocated - tOpened) / 1e9,
                    ((tThread - begin) + (readStart - tAllocated)) / 1e9, (allocTimes[1] - allocTimes[0]) / 1e9);
            return new EarlyReads(target, device, buffer, reads, layout.bytes(), batch, readStart - begin,
                    split, readStart);
        } catch (RuntimeException | Error e) {
            if (files != null) {
                for (io.phxfs.core.PhxFile f : files.values()) {
                    try {
                        f.close();
                    } catch (RuntimeException suppressed) {
                        e.addSuppressed(suppressed);
                    }
                }
            }
            if (buffer != null) {
                try {
                    buffer.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            if (e instanceof Error err) {
                throw err;
            }
            // the usual path will meet the same problem and report it with the whole plan
            return null;
        }
    }

    /** The size of a regular file, or -1 when it is not one (a named pipe would block the open) or cannot be read. */
    private static long regularFileSize(Path file) {
        try {
            java.nio.file.attribute.BasicFileAttributes at = file.getFileSystem().provider()
                    .readAttributesIfExists(file, java.nio.file.attribute.BasicFileAttributes.class);
            return at != null && at.isRegularFile() ? at.size() : -1;
        } catch (java.io.IOException | RuntimeException e) {
            return -1;
        }
    }

    /** {@code [data start, file size)} from the 8-byte length and the size; null when either is off. */
    private static long[] dataExtent(Path file, long maxHeaderBytes) {
        if (!java.nio.file.Files.isRegularFile(file)) {
            return null; // a named pipe would block the open; the parse refuses it
        }
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                java.nio.file.StandardOpenOption.READ)) {
            long size = ch.size();
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(SafetensorsHeader.LENGTH_PREFIX)
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining()) {
                if (ch.read(b, b.position()) < 0) {
                    return null;
                }
            }
            long n = b.getLong(0);
            if (n < 1 || n > maxHeaderBytes || n > size - SafetensorsHeader.LENGTH_PREFIX) {
                return null;
            }
            return new long[] {SafetensorsHeader.LENGTH_PREFIX + n, size};
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    /** True when the plan asks for exactly the reads already under way. */
    boolean matches(ReadPlan plan) {
        if (!plan.targets().equals(java.util.Set.of(target)) || plan.requests().size() != reads.size()
                || plan.bufferBytes().getOrDefault(target, 0L) != readBytes) {
            return false;
        }
        for (int i = 0; i < reads.size(); i++) {
            ReadPlan.ReadRequest p = plan.requests().get(i);
            Read r = reads.get(i);
            if (!p.file().file().equals(r.file()) || p.fileOffset() != r.fileOffset() || p.length() != r.length()
                    || p.neededLength() != r.neededLength() || p.bufferOffset() != r.bufferOffset()) {
                return false;
            }
        }
        return true;
    }

    /** Builds the views while the reads run, then waits for them. */
    LoadedModel finish(ModelFiles model, ReadPlan plan, long t0, long locateNanos, long parseNanos, long planNanos) {
        SortedMap<Integer, RegisteredBuffer> buffers = new TreeMap<>(Map.of(target, buffer));
        LoadedModel loaded;
        try {
            long tViews = System.nanoTime();
            Map<Integer, Device> devs = device == null ? Map.of() : Map.of(target, device);
            Map<String, LoadedTensor> tensors = BufferViews.of(plan, buffers, devs, null);
            long viewNanos = System.nanoTime() - tViews;
            batch.finish();
            long tEnd = System.nanoTime();
            loaded = new LoadedModel(model, plan, buffers, List.of(buffer), tensors, Map.of(), tEnd - t0,
                    new LoadedModel.Phases(locateNanos, parseNanos, planNanos, allocateNanos, tEnd - readStart, viewNanos, true)
                            .withSplit(LoadedModel.ReadSplit.of(readStart, batch.times(), tEnd))
                            .withAllocateSplit(allocateSplit));
        } catch (RuntimeException | Error e) {
            // the reads write into the buffer until they end: wait, then free
            abandon(e);
            throw e;
        }
        try {
            batch.close();
        } catch (RuntimeException | Error e) {
            // the files could not be closed: the load fails, and nothing of it stays allocated
            try {
                loaded.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return loaded;
    }

    /** Waits for the reads (they write into the buffer) and frees everything; {@code cause} keeps any failure. */
    void abandon(Throwable cause) {
        try (batch) {
            batch.abandon();
        } catch (RuntimeException | Error e) {
            if (cause != null) {
                cause.addSuppressed(e);
            }
        } finally {
            try {
                buffer.close();
            } catch (RuntimeException e) {
                if (cause != null) {
                    cause.addSuppressed(e);
                }
            }
        }
    }
}
