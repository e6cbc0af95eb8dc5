package io.phxfs.kvcache;

import io.phxfs.core.BatchResult;
import io.phxfs.core.Errno;
import io.phxfs.core.IoBatch;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.kvcache.DiskIndex.Entry;
import io.phxfs.kvcache.KvTier.Get;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A disk tier's read path: payloads read straight into the caller's memory, many in flight at
 * once, each checked against its CRC32C before it counts as a hit; a chunk that fails is dropped
 * from the index (and deleted). Takes no lock: a file evicted or replaced under a read is a miss.
 */
final class DiskReader {
    private final DiskIndex index;
    private final Path dir;
    private final Counters c;

    DiskReader(DiskIndex index) {
        this.index = index;
        this.dir = index.dir;
        this.c = index.counters;
    }

    /** {@link DiskTier#get}: one chunk, its checksum computed piece by piece as the pieces land. */
    boolean get(CacheKey key, MemorySegment dst) {
        String k = key.toString();
        Entry e = index.readable(k);
        if (e == null || e.payloadLen != dst.byteSize()) {
            c.misses.increment();
            return false;
        }
        Path p = dir.resolve(e.file);
        if (!isChunkFile(k, e)) {
            return false;
        }
        try (PhxFile f = PhxFile.open(p, OpenMode.READ, OpenMode.DIRECT);
             RegisteredBuffer b = Phoenix.open().host().wrap(dst)) {
            if (!readVerified(f, b, dst, e)) {
                dropCorrupt(k, e);
                c.misses.increment();
                return false;
            }
        } catch (PhoenixException ex) {
            gone(k, e, ex.errno());
            c.misses.increment();
            return false;
        }
        index.touch(e);
        c.hits.increment();
        c.bytesRead.add(e.payloadLen);
        return true;
    }

    /** Bytes per batch of {@link #getAll}: each batch's checksums run while later batches read. */
    private static final long GET_BATCH = 64L << 20;
    /** Chunks per batch of {@link #getAll}: with small chunks, the bound on open files. */
    private static final int GET_BATCH_CHUNKS = 32;
    /**
     * Batches {@link #getAll} keeps in flight: 512 MiB of large chunks, as deep as one large raw
     * read goes; at most 256 files open.
     */
    private static final int GET_BATCHES = 8;

    /** A chunk of {@link #getAll} on its way from its file. */
    private static final class Fetch {
        final int slot;
        final String key;
        final Entry entry;
        final MemorySegment dst;
        PhxFile file;
        RegisteredBuffer buf;

        Fetch(int slot, String key, Entry entry, MemorySegment dst) {
            this.slot = slot;
            this.key = key;
            this.entry = entry;
            this.dst = dst;
        }

        void close() {
            if (buf != null) {
                buf.close();
            }
            if (file != null) {
                file.close();
            }
        }
    }

    /**
     * Reads the chunks' payloads in batches of about {@link #GET_BATCH} (at most
     * {@link #GET_BATCH_CHUNKS} chunks), {@link #GET_BATCHES} batches in flight, checking each batch's CRC32C while the next ones read: the depth of one
     * large read, where chunk-by-chunk reads left the disk idle between chunks.
     */
    boolean[] getAll(List<Get> gets) {
        return getAll(gets, GET_BATCH, GET_BATCH_CHUNKS, GET_BATCHES);
    }

    /** {@link #getAll(List)} with the batch sizes and window given (tests make them small). */
    boolean[] getAll(List<Get> gets, long batchBytes, int batchChunks, int batches) {
        boolean[] ok = new boolean[gets.size()];
        java.util.ArrayDeque<List<Fetch>> groups = new java.util.ArrayDeque<>();
        List<Fetch> group = new ArrayList<>();
        long groupBytes = 0;
        for (int i = 0; i < gets.size(); i++) {
            Get g = gets.get(i);
            String k = g.key().toString();
            Entry e = index.readable(k);
            if (e == null || e.payloadLen != g.dst().byteSize()) {
                c.misses.increment();
                continue;
            }
            group.add(new Fetch(i, k, e, g.dst()));
            groupBytes += e.payloadLen;
            if (groupBytes >= batchBytes || group.size() >= batchChunks) {
                groups.add(group);
                group = new ArrayList<>();
                groupBytes = 0;
            }
        }
        if (!group.isEmpty()) {
            groups.add(group);
        }
        java.util.ArrayDeque<InFlight> inFlight = new java.util.ArrayDeque<>();
        try {
            while (!groups.isEmpty() || !inFlight.isEmpty()) {
                while (!groups.isEmpty() && inFlight.size() < batches) {
                    InFlight f = submit(groups.poll());
                    if (f != null) {
                        inFlight.add(f);
                    }
                }
                InFlight f = inFlight.poll();
                if (f == null) {
                    continue;
                }
                settle(f, ok);
            }
        } finally {
            for (InFlight f : inFlight) { // only after a throw: every read done before the buffers go
                f.result.exceptionally(t -> null).join();
                f.close();
            }
        }
        return ok;
    }

    /** A submitted batch of {@link #getAll}: one read per chunk whose file opened. */
    private static final class InFlight {
        final List<Fetch> fetches;
        final IoBatch batch;
        final CompletableFuture<BatchResult> result;

        InFlight(List<Fetch> fetches, IoBatch batch, CompletableFuture<BatchResult> result) {
            this.fetches = fetches;
            this.batch = batch;
            this.result = result;
        }

        void close() {
            batch.close();
            fetches.forEach(Fetch::close);
        }
    }

    /** Opens the group's files and submits their reads; a file that cannot be opened is a miss. */
    private InFlight submit(List<Fetch> group) {
        var host = Phoenix.open().host();
        List<Fetch> open = new ArrayList<>(group.size());
        for (Fetch f : group) {
            if (!isChunkFile(f.key, f.entry)) {
                continue;
            }
            try {
                f.file = PhxFile.open(dir.resolve(f.entry.file), OpenMode.READ, OpenMode.DIRECT);
                f.buf = host.wrap(f.dst);
                open.add(f);
            } catch (PhoenixException ex) {
                f.close();
                missed(f, ex.errno());
            }
        }
        if (open.isEmpty()) {
            return null;
        }
        IoBatch batch = IoBatch.create(open.size());
        try {
            for (Fetch f : open) {
                batch.read(f.file, f.buf, 0, f.entry.payloadLen, ChunkFileHeader.SIZE);
            }
            return new InFlight(open, batch, batch.submitAsync());
        } catch (RuntimeException ex) {
            batch.close();
            open.forEach(Fetch::close);
            c.errors.add(open.size());
            c.misses.add(open.size());
            return null;
        }
    }

    /** Waits for a batch, then verifies each chunk: a short read or a wrong checksum is corrupt. */
    private void settle(InFlight f, boolean[] ok) {
        try {
            BatchResult r;
            try {
                r = f.result.join();
            } catch (CompletionException ex) {
                c.errors.add(f.fetches.size());
                c.misses.add(f.fetches.size());
                return;
            }
            for (int i = 0; i < f.fetches.size(); i++) {
                Fetch x = f.fetches.get(i);
                long got = r.result(i);
                if (got < 0) {
                    missed(x, (int) -got);
                } else if (got != x.entry.payloadLen || ChunkFileHeader.crc(x.dst) != x.entry.crc) {
                    dropCorrupt(x.key, x.entry);
                    c.misses.increment();
                } else {
                    index.touch(x.entry);
                    c.hits.increment();
                    c.bytesRead.add(x.entry.payloadLen);
                    ok[x.slot] = true;
                }
            }
        } finally {
            f.close();
        }
    }

    /** A chunk whose file could not be opened or read: a miss; gone meanwhile, it leaves the index. */
    private void missed(Fetch f, int errno) {
        gone(f.key, f.entry, errno);
        c.misses.increment();
    }

    /**
     * Whether the entry's name holds a regular file, looked at before it is opened; anything
     * else is a miss that leaves the index ({@link DiskIndex#dropForeign}).
     */
    private boolean isChunkFile(String k, Entry e) {
        DiskIndex.Found found = DiskIndex.lstat(dir.resolve(e.file));
        if (found == DiskIndex.Found.FILE) {
            return true;
        }
        if (found == DiskIndex.Found.GONE) {
            index.forget(k, e); // removed by another process (or an eviction) meanwhile
        } else {
            index.dropForeign(k, e, found == DiskIndex.Found.DIRECTORY);
        }
        c.misses.increment();
        return false;
    }

    /**
     * A chunk whose open or read failed with {@code errno}: gone (ENOENT) it leaves the index;
     * no longer readable by this process (a directory, permission taken away, a loop of links)
     * it leaves the index too, its bytes given back, where it stayed counted until a restart;
     * any other error (EIO, EMFILE, ENOMEM) may pass and only counts.
     */
    private void gone(String k, Entry e, int errno) {
        switch (errno) {
            case Errno.ENOENT -> index.forget(k, e);
            case Errno.EISDIR -> index.dropForeign(k, e, true);
            case Errno.EACCES, Errno.EPERM, Errno.ELOOP, Errno.ENXIO, Errno.ENODEV, Errno.ENOTDIR -> {
                c.errors.increment();
                index.dropForeign(k, e, false);
            }
            default -> c.errors.increment();
        }
    }

    /** Pieces a payload is read in, so that the checksum of one runs while the next ones are read. */
    private static final long PIECE = 4L << 20;

    /**
     * Reads the payload in pieces of {@link #PIECE}, all in flight at once, and checks the
     * CRC32C of each piece as it lands (in order), rather than after the whole read.
     */
    private boolean readVerified(PhxFile f, RegisteredBuffer b, MemorySegment dst, Entry e) {
        long len = e.payloadLen;
        int pieces = (int) Math.max(1, (len + PIECE - 1) / PIECE);
        List<IoBatch> batches = new ArrayList<>(pieces);
        List<CompletableFuture<BatchResult>> fs = new ArrayList<>(pieces);
        try {
            for (int i = 0; i < pieces; i++) {
                long off = i * PIECE;
                long n = Math.min(PIECE, len - off);
                IoBatch batch = IoBatch.create(1);
                batches.add(batch);
                batch.read(f, b, off, n, ChunkFileHeader.SIZE + off);
                fs.add(batch.submitAsync());
            }
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            boolean ok = true;
            for (int i = 0; i < pieces; i++) {
                long off = i * PIECE;
                long n = Math.min(PIECE, len - off);
                long got;
                try {
                    got = fs.get(i).join().result(0);
                } catch (CompletionException ex) {
                    throw ex.getCause() instanceof PhoenixException pe ? pe : ex;
                }
                if (got != n) {
                    ok = false;
                }
                if (ok) {
                    crc.update(dst.asSlice(off, n).asByteBuffer());
                }
            }
            return ok && (int) crc.getValue() == e.crc;
        } finally {
            for (int i = 0; i < fs.size(); i++) {
                fs.get(i).exceptionally(t -> null).join(); // every read done before the buffer is released
            }
            batches.forEach(IoBatch::close);
        }
    }

    private void dropCorrupt(String key, Entry e) {
        if (index.forget(key, e)) {
            c.corrupt.increment();
            if (!index.readOnly) {
                DiskIndex.deleteQuietly(dir.resolve(e.file));
            }
        }
    }
}
