package io.phxfs.kvcache;

import io.phxfs.core.BatchResult;
import io.phxfs.core.Errno;
import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.kvcache.DiskIndex.Entry;
import io.phxfs.kvcache.DiskTier.FsyncPolicy;
import io.phxfs.kvcache.KvTier.Put;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A disk tier's write path: chunk files written in groups, each under a temporary name until it
 * is whole (and synced as the policy says), then renamed into the index. Takes no lock of its
 * own; room is reserved through {@link DiskEviction}, which takes its lock to evict.
 */
final class DiskWriter {
    private final DiskIndex index;
    private final DiskEviction eviction;
    private final FsyncPolicy fsync;
    private final Path dir;
    private final Counters c;
    private final AtomicLong tmpSeq = new AtomicLong();
    /** Makes the directory again when it was removed under the tier; false when it cannot. */
    private final java.util.function.BooleanSupplier restoreDirectory;

    DiskWriter(DiskIndex index, DiskEviction eviction, FsyncPolicy fsync, java.util.function.BooleanSupplier restoreDirectory) {
        this.index = index;
        this.restoreDirectory = restoreDirectory;
        this.eviction = eviction;
        this.fsync = fsync;
        this.dir = index.dir;
        this.c = index.counters;
    }

    /** {@link DiskTier#putAll}: the chunks in groups of up to {@link DiskTier#GROUP}. */
    boolean[] putAll(KvLayout layout, List<Put> puts) {
        boolean[] ok = new boolean[puts.size()];
        for (int from = 0; from < puts.size(); from += DiskTier.GROUP) {
            putGroup(layout, puts.subList(from, Math.min(puts.size(), from + DiskTier.GROUP)), ok, from, true);
        }
        return ok;
    }

    /** A chunk of a group on its way to its file. */
    private static final class Pending {
        final int slot;
        final Put put;
        final String key;
        final String name;
        final Path tmp;
        final long len;
        final long fileBytes;
        PhxFile file;
        RegisteredBuffer payload;
        int crc;
        int errno; // 0 while all is well

        Pending(int slot, Put put, String key, String name, Path tmp, long len) {
            this.slot = slot;
            this.put = put;
            this.key = key;
            this.name = name;
            this.tmp = tmp;
            this.len = len;
            this.fileBytes = ChunkFileHeader.SIZE + len;
        }

        void fail(int e) {
            if (errno == 0) {
                errno = e == 0 ? Errno.EIO : e;
            }
        }
    }

    private void putGroup(KvLayout layout, List<Put> group, boolean[] ok, int base, boolean mayRetry) {
        List<Pending> ps = new ArrayList<>(group.size());
        for (int i = 0; i < group.size(); i++) {
            Put p = group.get(i);
            if (index.closed() || index.readOnly) {
                c.failedPuts.increment();
                continue;
            }
            String k = p.key().toString();
            Entry have = index.entries.get(k);
            if (have != null) {
                index.touch(have);
                ok[base + i] = true;
                continue;
            }
            long len = p.payload().byteSize();
            if (len != layout.bytesPerChunk(p.tokens())
                    || k.getBytes(StandardCharsets.UTF_8).length > ChunkFileHeader.MAX_KEY_BYTES) {
                c.failedPuts.increment();
                continue;
            }
            long fileBytes = ChunkFileHeader.SIZE + len;
            if (!eviction.reserve(fileBytes)) {
                c.failedPuts.increment();
                continue;
            }
            String name = DiskIndex.fileName(k);
            Path tmp = dir.resolve(name + DiskIndex.TMP + ProcessHandle.current().pid() + "-" + tmpSeq.incrementAndGet());
            ps.add(new Pending(base + i, p, k, name, tmp, len));
        }
        if (ps.isEmpty()) {
            return;
        }
        if (!Files.isDirectory(dir)) {
            restoreDirectory.getAsBoolean(); // removed while running (a cache cleared by hand): made again
        }
        List<Pending> retry = new ArrayList<>();
        try {
            writeGroup(layout, ps);
            if (fsync != FsyncPolicy.NONE) {
                for (Pending p : ps) {
                    if (p.errno == 0) {
                        try (FileChannel ch = FileChannel.open(p.tmp, StandardOpenOption.WRITE)) {
                            ch.force(true);
                        } catch (IOException e) {
                            p.fail(Errno.EIO);
                        }
                    }
                }
            }
        } finally {
            for (Pending p : ps) {
                closeQuietly(p);
            }
        }
        boolean renamed = false;
        for (Pending p : ps) {
            if (p.errno == 0) {
                try {
                    Files.move(p.tmp, dir.resolve(p.name), StandardCopyOption.ATOMIC_MOVE);
                    renamed = true;
                } catch (IOException | RuntimeException e) {
                    p.fail(Errno.EIO);
                }
            }
        }
        if (renamed && fsync == FsyncPolicy.FULL) {
            try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
                d.force(true);
            } catch (IOException e) {
                // the renames happened but are not known durable: report those chunks as failed
                // (their files stay, and a later open indexes them: a miss now, perhaps a hit then)
                for (Pending p : ps) {
                    if (p.errno == 0) {
                        p.fail(Errno.EIO);
                        index.used.addAndGet(-p.fileBytes);
                        c.errors.increment();
                        c.failedPuts.increment();
                        p.errno = -1; // settled
                    }
                }
            }
        }
        for (Pending p : ps) {
            if (p.errno == -1) {
                continue;
            }
            if (p.errno == 0) {
                Entry e = new Entry(p.name, p.fileBytes, p.len, p.crc, index.tick());
                Entry prev = index.entries.put(p.key, e);
                if (prev != null) {
                    index.used.addAndGet(-prev.fileBytes); // another thread wrote the same key: same bytes, one file
                }
                c.puts.increment();
                c.bytesWritten.add(p.len);
                ok[p.slot] = true;
                continue;
            }
            DiskIndex.deleteQuietly(p.tmp);
            index.used.addAndGet(-p.fileBytes);
            boolean full = p.errno == Errno.ENOSPC || p.errno == Errno.EDQUOT;
            // out of space: make room once and try again; any other error fails the store
            if (full && mayRetry && eviction.evictLru(p.fileBytes)) {
                retry.add(p);
            } else {
                c.errors.increment();
                c.failedPuts.increment();
            }
        }
        for (Pending p : retry) {
            putGroup(layout, List.of(p.put), ok, p.slot, false);
        }
    }

    /**
     * Writes the group's temporary files: the payloads as one batch, whose CRC32Cs are computed
     * while it runs (the checksum would otherwise add its time to every store), then the headers
     * that carry them as a second batch. Failures are recorded per chunk.
     */
    private void writeGroup(KvLayout layout, List<Pending> ps) {
        var host = Phoenix.open().host();
        List<Pending> open = new ArrayList<>(ps.size());
        for (Pending p : ps) {
            try {
                PrivateFiles.createPrivateFile(p.tmp);
                p.file = PhxFile.open(p.tmp, OpenMode.WRITE, OpenMode.CREATE, OpenMode.TRUNCATE, OpenMode.DIRECT);
                p.payload = host.wrap(p.put.payload());
                open.add(p);
            } catch (PhoenixException e) {
                p.fail(e.errno());
            } catch (AccessDeniedException e) {
                p.fail(Errno.EACCES);
            } catch (IOException | RuntimeException e) {
                p.fail(Errno.EIO);
            }
        }
        if (open.isEmpty()) {
            return;
        }
        try (Arena arena = Arena.ofConfined();
             IoBatch batch = IoBatch.create(open.size())) {
            for (Pending p : open) {
                batch.add(IoRequest.write(p.file, ChunkFileHeader.SIZE, p.payload, 0, p.len));
            }
            CompletableFuture<BatchResult> w;
            try {
                w = batch.submitAsync();
            } catch (PhoenixException e) {
                open.forEach(p -> p.fail(e.errno()));
                return;
            }
            for (Pending p : open) {
                p.crc = ChunkFileHeader.crc(p.put.payload());
            }
            BatchResult r;
            try {
                r = w.join();
            } catch (CompletionException e) {
                int errno = e.getCause() instanceof PhoenixException pe ? pe.errno() : Errno.EIO;
                open.forEach(p -> p.fail(errno));
                return;
            }
            List<Pending> written = new ArrayList<>(open.size());
            for (int i = 0; i < open.size(); i++) {
                Pending p = open.get(i);
                long n = r.result(i);
                if (n < 0) {
                    p.fail((int) -n);
                } else if (n != p.len) {
                    p.fail(Errno.EIO); // a short write
                } else {
                    written.add(p);
                }
            }
            if (written.isEmpty()) {
                return;
            }
            MemorySegment hs = arena.allocate((long) ChunkFileHeader.SIZE * written.size(), ChunkFileHeader.SIZE);
            try (RegisteredBuffer hb = host.wrap(hs);
                 IoBatch headers = IoBatch.create(written.size())) {
                for (int i = 0; i < written.size(); i++) {
                    Pending p = written.get(i);
                    long at = (long) ChunkFileHeader.SIZE * i;
                    new ChunkFileHeader(p.key, p.len, p.crc, p.put.tokens(), layout).encode(hs.asSlice(at, ChunkFileHeader.SIZE));
                    headers.add(IoRequest.write(p.file, 0, hb, at, ChunkFileHeader.SIZE));
                }
                BatchResult hr = headers.run();
                for (int i = 0; i < written.size(); i++) {
                    long n = hr.result(i);
                    if (n != ChunkFileHeader.SIZE) {
                        written.get(i).fail(n < 0 ? (int) -n : Errno.EIO);
                    }
                }
            } catch (PhoenixException e) {
                written.forEach(p -> p.fail(e.errno()));
            }
        }
    }

    private static void closeQuietly(Pending p) {
        try {
            if (p.payload != null) {
                p.payload.close();
            }
        } catch (RuntimeException e) {
            p.fail(Errno.EIO);
        }
        try {
            if (p.file != null) {
                p.file.close();
            }
        } catch (RuntimeException e) {
            p.fail(Errno.EIO);
        }
    }
}
