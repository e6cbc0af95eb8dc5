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
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Local disk through Phoenix: one file per chunk, {@code <sha256 of the key>.kv}, a 4 KiB
 * {@link ChunkFileHeader header} (magic, version, key, layout, length, CRC32C of the payload)
 * then the payload at byte 4096, written with O_DIRECT where the file system allows it.
 *
 * <p>A chunk is written to a temporary name, synced as {@link FsyncPolicy} says, then renamed:
 * a reader (or a restarted process) sees a whole file or none. The index is rebuilt from the
 * headers when the tier opens (payloads are verified lazily, on read); leftover temporary files
 * are deleted. A file whose header is damaged, torn or another key's, or whose payload fails its
 * checksum, is a miss: it is deleted and counted in {@link TierStats#corrupt()}, never returned.
 *
 * <p>The byte cap and a free-space watermark are kept by evicting the least recently used
 * chunks; a store that still finds no room, or meets ENOSPC, fails cleanly (the temporary file
 * is removed) and is counted.
 */
public final class DiskTier implements KvTier {
    /** When chunk files reach stable storage. */
    public enum FsyncPolicy {
        /** Never synced: survives a killed process (the page cache keeps the data), not a power loss. */
        NONE,
        /** The file is synced before its rename: its bytes survive a power loss once visible. */
        FILE,
        /** The file before its rename and the directory after: the entry itself survives a power loss. */
        FULL
    }

    static final String SUFFIX = ".kv";
    private static final String TMP = ".tmp-";
    /** The cache directory's mode when the tier creates it, whatever the umask. */
    static final Set<PosixFilePermission> DIR_MODE = PosixFilePermissions.fromString("rwx------");
    /** Every chunk file's mode from its creation on, whatever the umask. */
    static final Set<PosixFilePermission> FILE_MODE = PosixFilePermissions.fromString("rw-------");

    private final Path dir;
    private final long capBytes;
    private final long minFreeBytes;
    private final FsyncPolicy fsync;
    private final boolean readOnly;
    private final FileStore store;
    private final ConcurrentHashMap<String, Entry> index = new ConcurrentHashMap<>();
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong tmpSeq = new AtomicLong();
    private final AtomicLong clock = new AtomicLong();
    private final Counters c = new Counters();
    private final Object evictLock = new Object();
    private volatile boolean closed;
    private final long startupNanos;
    private final int removedTemps;

    /** One indexed chunk file. */
    private static final class Entry {
        final String file;
        final long fileBytes;
        final long payloadLen;
        final int crc;
        volatile long lastUse;

        Entry(String file, long fileBytes, long payloadLen, int crc, long lastUse) {
            this.file = file;
            this.fileBytes = fileBytes;
            this.payloadLen = payloadLen;
            this.crc = crc;
            this.lastUse = lastUse;
        }
    }

    /**
     * Opens (creating it if needed) the directory and rebuilds the index from the headers there.
     *
     * @param dir          the cache directory ({@code local_disk})
     * @param capBytes     the byte cap ({@code max_local_disk_size}), {@code > 0}
     * @param minFreeBytes stores evict (or fail) rather than leave less free space on the file system
     * @param fsync        when files are synced
     * @throws UncheckedIOException naming the directory when it cannot be created or listed
     */
    public DiskTier(Path dir, long capBytes, long minFreeBytes, FsyncPolicy fsync) {
        this(dir, capBytes, minFreeBytes, fsync, false);
    }

    /**
     * Reads the directory's headers without changing anything: damaged files and leftover
     * temporaries are counted ({@link TierStats#corrupt()}, {@link #removedTemporaries()}),
     * not deleted, and stores are refused. What {@code phoenix kv stats} shows.
     *
     * @param dir the cache directory
     * @return a read-only tier over it
     * @throws IllegalArgumentException when {@code dir} is not a directory
     */
    public static DiskTier openReadOnly(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + ": " + (Files.exists(dir) ? "not a directory" : "no such directory"));
        }
        return new DiskTier(dir, Long.MAX_VALUE, 0, FsyncPolicy.NONE, true);
    }

    /** Opens the directory; {@code readOnly} only reads and counts (nothing deleted). */
    DiskTier(Path dir, long capBytes, long minFreeBytes, FsyncPolicy fsync, boolean readOnly) {
        if (capBytes <= 0) {
            throw new IllegalArgumentException("max_local_disk_size must be > 0, was " + capBytes + " bytes");
        }
        this.dir = dir;
        this.capBytes = capBytes;
        this.minFreeBytes = Math.max(0, minFreeBytes);
        this.fsync = fsync;
        this.readOnly = readOnly;
        long t0 = System.nanoTime();
        try {
            if (!readOnly) {
                preparePrivateDirectory(dir);
            }
            this.store = Files.getFileStore(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("local_disk " + dir + ": " + e.getMessage(), e);
        }
        Phoenix.open();
        this.removedTemps = rebuild();
        this.startupNanos = System.nanoTime() - t0;
    }

    /**
     * Creates the cache directory 0700 (parents as the umask says) when it is missing, and
     * refuses one that another user owns or that group or others can write: anyone who can
     * write there can plant or swap chunk files that this process then serves as KV cache, and
     * a directory of another user's can be emptied or read by them. The messages (without the
     * "local_disk DIR: " prefix the constructor adds) name the owner, the mode and the fix.
     */
    static void preparePrivateDirectory(Path dir) throws IOException {
        long me = processUid();
        if (!Files.exists(dir)) {
            Path parent = dir.toAbsolutePath().getParent();
            try {
                if (parent != null) {
                    Files.createDirectories(parent);
                }
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(DIR_MODE));
                Files.setPosixFilePermissions(dir, DIR_MODE); /* a umask like 0277 takes bits from 0700 too */
            } catch (FileAlreadyExistsException raced) {
                // created meanwhile (another tier of this process, or someone else): checked below
            } catch (AccessDeniedException e) {
                throw new IOException("cannot create it: permission denied on " + e.getFile() + " (this process runs as uid "
                        + me + "); create the directory for this user (mode 0700) or point local_disk at one it can write", e);
            }
        }
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class);
        if (!a.isDirectory()) {
            throw new IOException("not a directory");
        }
        Object owner = Files.getAttribute(dir, "unix:uid");
        String mode = PosixFilePermissions.toString(a.permissions()) + " (" + octal(a.permissions()) + ")";
        if (me >= 0 && owner instanceof Integer uid && uid != me) {
            throw new IOException("owned by uid " + uid + " (" + a.owner().getName() + "), mode " + mode
                    + ", not by this process's uid " + me + ": another user could read, replace or delete the cached"
                    + " chunks. Use a directory owned by this user (chown it, or point local_disk elsewhere)");
        }
        if (a.permissions().contains(PosixFilePermission.GROUP_WRITE) || a.permissions().contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new IOException("mode " + mode + " lets group or others write into it (owner " + a.owner().getName()
                    + "), so they could plant or swap cached chunks. Run 'chmod 700 " + dir + "' or point local_disk elsewhere");
        }
        if (!Files.isWritable(dir) || !Files.isExecutable(dir)) {
            throw new IOException("not writable by this process (uid " + me + "; owner " + a.owner().getName() + ", mode " + mode
                    + "). Give the owner rwx ('chmod 700 " + dir + "') or point local_disk at a directory this user can write");
        }
    }

    /** This process's effective uid (the owner of /proc/self on Linux), or -1 when unknown. */
    private static long processUid() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static String octal(Set<PosixFilePermission> perms) {
        int m = 0;
        for (PosixFilePermission p : perms) {
            m |= 1 << (8 - p.ordinal());
        }
        return String.format("%04o", m);
    }

    /**
     * Creates a chunk's temporary file 0600 before libphoenix opens it: PhxFile.open creates
     * with 0644 less the umask and takes no mode, so the file is made here, never broader than
     * 0600 (the creation mode) and set to exactly 0600 before any byte is written; PhxFile then
     * opens the existing file (O_CREAT without effect, O_TRUNC empties a leftover).
     */
    private static void createPrivateFile(Path p) throws IOException {
        try {
            Files.createFile(p, PosixFilePermissions.asFileAttribute(FILE_MODE));
        } catch (FileAlreadyExistsException e) {
            // a leftover of an earlier process with this pid: truncated by the open
        }
        Files.setPosixFilePermissions(p, FILE_MODE);
    }

    /** Reads every header; deletes temporary leftovers and bad files. Returns the temporaries removed. */
    private int rebuild() {
        int temps = 0;
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                files.add(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("local_disk " + dir + ": cannot list: " + e.getMessage(), e);
        }
        // oldest first, so that the rebuilt LRU order follows the files' ages
        files.sort(Comparator.comparingLong(DiskTier::mtime));
        ByteBuffer hdr = ByteBuffer.allocate(ChunkFileHeader.SIZE);
        for (Path p : files) {
            String name = p.getFileName().toString();
            if (name.contains(TMP)) {
                temps++;
                if (!readOnly) {
                    deleteQuietly(p);
                }
                continue;
            }
            if (!name.endsWith(SUFFIX)) {
                continue; // not ours: left alone
            }
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                long size = ch.size();
                hdr.clear();
                while (hdr.hasRemaining() && ch.read(hdr, hdr.position()) > 0) {
                    // read the whole header
                }
                hdr.flip();
                ChunkFileHeader h = ChunkFileHeader.decode(hdr);
                if (size != ChunkFileHeader.SIZE + h.payloadLen()) {
                    throw new IllegalArgumentException("file is " + size + " bytes, header says "
                            + (ChunkFileHeader.SIZE + h.payloadLen()));
                }
                if (!name.equals(fileName(h.key()))) {
                    throw new IllegalArgumentException("holds key " + h.key() + ", which belongs in " + fileName(h.key()));
                }
                index.put(h.key(), new Entry(name, size, h.payloadLen(), h.payloadCrc(), clock.incrementAndGet()));
                used.addAndGet(size);
            } catch (IllegalArgumentException | IOException e) {
                c.corrupt.increment();
                if (!readOnly) {
                    deleteQuietly(p);
                }
            }
        }
        return temps;
    }

    private static long mtime(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    /** {@code <first 40 hex digits of SHA-256(key)>.kv}: fixed length, no characters a file system dislikes. */
    static String fileName(String key) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return ChunkHasher.hex(h).substring(0, 40) + SUFFIX;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String name() {
        return "disk";
    }

    /**
     * The directory.
     *
     * @return the cache directory
     */
    public Path dir() {
        return dir;
    }

    /**
     * How long opening took (listing and reading every header).
     *
     * @return nanoseconds spent rebuilding the index
     */
    public long startupNanos() {
        return startupNanos;
    }

    /**
     * Temporary files of interrupted stores found at open (and deleted, unless read-only).
     *
     * @return leftover temporaries
     */
    public int removedTemporaries() {
        return removedTemps;
    }

    @Override
    public boolean contains(CacheKey key) {
        return index.containsKey(key.toString());
    }

    @Override
    public boolean put(CacheKey key, KvLayout layout, int tokens, MemorySegment payload) {
        return putAll(layout, List.of(new Put(key, tokens, payload)))[0];
    }

    /**
     * Chunks written together at most: one file descriptor each is open until the group is
     * synced, and a group is one Phoenix batch and one round of syncs.
     */
    static final int GROUP = 64;

    /**
     * Writes the chunks as groups of up to {@link #GROUP}: every temporary file of a group in
     * one Phoenix batch (the payloads' CRC32C computed while it runs), the headers in a second
     * batch, then each file synced as the policy says, then the renames, then (policy
     * {@code full}) one sync of the directory. A chunk's file is renamed only after its own
     * sync, so a visible file is as durable as with one {@link #put} per chunk; what the group
     * saves is the wait: one store's files reach the disk together and the first sync's journal
     * commit carries the others' metadata, where a sync per chunk waits for one commit each.
     */
    @Override
    public boolean[] putAll(KvLayout layout, List<Put> puts) {
        boolean[] ok = new boolean[puts.size()];
        for (int from = 0; from < puts.size(); from += GROUP) {
            putGroup(layout, puts.subList(from, Math.min(puts.size(), from + GROUP)), ok, from, true);
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
            if (closed || readOnly) {
                c.failedPuts.increment();
                continue;
            }
            String k = p.key().toString();
            Entry have = index.get(k);
            if (have != null) {
                have.lastUse = clock.incrementAndGet();
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
            if (fileBytes > capBytes || !reserve(fileBytes)) {
                c.failedPuts.increment();
                continue;
            }
            String name = fileName(k);
            Path tmp = dir.resolve(name + TMP + ProcessHandle.current().pid() + "-" + tmpSeq.incrementAndGet());
            ps.add(new Pending(base + i, p, k, name, tmp, len));
        }
        if (ps.isEmpty()) {
            return;
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
                        used.addAndGet(-p.fileBytes);
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
                Entry e = new Entry(p.name, p.fileBytes, p.len, p.crc, clock.incrementAndGet());
                Entry prev = index.put(p.key, e);
                if (prev != null) {
                    used.addAndGet(-prev.fileBytes); // another thread wrote the same key: same bytes, one file
                }
                c.puts.increment();
                c.bytesWritten.add(p.len);
                ok[p.slot] = true;
                continue;
            }
            deleteQuietly(p.tmp);
            used.addAndGet(-p.fileBytes);
            boolean full = p.errno == Errno.ENOSPC || p.errno == Errno.EDQUOT;
            // out of space: make room once and try again; any other error fails the store
            if (full && mayRetry && evictLru(p.fileBytes)) {
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
                createPrivateFile(p.tmp);
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

    /** Takes {@code bytes} of the cap and of the free-space watermark, evicting as needed. */
    private boolean reserve(long bytes) {
        long now = used.addAndGet(bytes);
        if (now > capBytes && !evictUntil(() -> used.get() <= capBytes)) {
            used.addAndGet(-bytes);
            return false;
        }
        if (minFreeBytes > 0 && !evictUntil(() -> usable() >= minFreeBytes + bytes)) {
            used.addAndGet(-bytes);
            return false;
        }
        return true;
    }

    private long usable() {
        try {
            return store.getUsableSpace();
        } catch (IOException e) {
            return Long.MAX_VALUE; // cannot tell: rely on ENOSPC
        }
    }

    /** Evicts least recently used chunks until {@code done}; false when nothing is left to evict. */
    private boolean evictUntil(java.util.function.BooleanSupplier done) {
        synchronized (evictLock) {
            while (!done.getAsBoolean()) {
                if (!evictOldest()) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Frees about {@code bytes} by eviction; false when nothing could be evicted. */
    private boolean evictLru(long bytes) {
        synchronized (evictLock) {
            long freed = 0;
            while (freed < bytes) {
                Entry e = oldest();
                if (e == null || !evictOldest()) {
                    return freed > 0;
                }
                freed += e.fileBytes;
            }
            return true;
        }
    }

    private Entry oldest() {
        Entry best = null;
        for (Entry e : index.values()) {
            if (best == null || e.lastUse < best.lastUse) {
                best = e;
            }
        }
        return best;
    }

    /** Evicts the least recently used chunk. Holds evictLock. */
    private boolean evictOldest() {
        String bestKey = null;
        Entry best = null;
        for (var me : index.entrySet()) {
            if (best == null || me.getValue().lastUse < best.lastUse) {
                best = me.getValue();
                bestKey = me.getKey();
            }
        }
        if (best == null) {
            return false;
        }
        if (index.remove(bestKey, best)) {
            deleteQuietly(dir.resolve(best.file));
            used.addAndGet(-best.fileBytes);
            c.evictions.increment();
        }
        return true;
    }

    @Override
    public boolean get(CacheKey key, MemorySegment dst) {
        String k = key.toString();
        Entry e = closed ? null : index.get(k);
        if (e == null || e.payloadLen != dst.byteSize()) {
            c.misses.increment();
            return false;
        }
        Path p = dir.resolve(e.file);
        try (PhxFile f = PhxFile.open(p, OpenMode.READ, OpenMode.DIRECT);
             RegisteredBuffer b = Phoenix.open().host().wrap(dst)) {
            if (!readVerified(f, b, dst, e)) {
                dropCorrupt(k, e);
                c.misses.increment();
                return false;
            }
        } catch (PhoenixException ex) {
            if (ex.errno() == Errno.ENOENT) {
                if (index.remove(k, e)) { // removed by another process (or an eviction) meanwhile
                    used.addAndGet(-e.fileBytes);
                }
            } else {
                c.errors.increment();
            }
            c.misses.increment();
            return false;
        }
        e.lastUse = clock.incrementAndGet();
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
    @Override
    public boolean[] getAll(List<Get> gets) {
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
            Entry e = closed ? null : index.get(k);
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
                    x.entry.lastUse = clock.incrementAndGet();
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
        if (errno == Errno.ENOENT) {
            if (index.remove(f.key, f.entry)) { // removed by another process (or an eviction) meanwhile
                used.addAndGet(-f.entry.fileBytes);
            }
        } else {
            c.errors.increment();
        }
        c.misses.increment();
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
        if (index.remove(key, e)) {
            used.addAndGet(-e.fileBytes);
            c.corrupt.increment();
            if (!readOnly) {
                deleteQuietly(dir.resolve(e.file));
            }
        }
    }

    @Override
    public void remove(CacheKey key) {
        Entry e = index.remove(key.toString());
        if (e != null) {
            used.addAndGet(-e.fileBytes);
            deleteQuietly(dir.resolve(e.file));
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (NoSuchFileException ignored) {
            // gone already
        } catch (IOException ignored) {
            // a file that cannot be deleted stays out of the index: never served
        }
    }

    /**
     * Keys held now (the index), for tools such as {@code phoenix kv stats}.
     *
     * @return a copy of the indexed keys
     */
    public List<String> keys() {
        return new ArrayList<>(index.keySet());
    }

    @Override
    public TierStats stats() {
        return c.snapshot(name(), index.size(), used.get(), capBytes);
    }

    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "DiskTier[" + dir + ", " + index.size() + " chunks, " + used.get() + " of " + capBytes + " bytes]";
    }
}
