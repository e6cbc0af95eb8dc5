package io.phxfs.kvcache;

import io.phxfs.core.Phoenix;
import io.phxfs.kvcache.DiskIndex.Entry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
 * <p>One writing tier holds a directory at a time ({@link DirectoryLock}): a second one, in
 * this process or another, is refused with a message naming the holder.
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

    /**
     * Chunks written together at most: one file descriptor each is open until the group is
     * synced, and a group is one Phoenix batch and one round of syncs.
     */
    static final int GROUP = 64;

    private final long capBytes;
    private final DiskIndex index;
    private final DiskWriter writer;
    private final DiskReader reader;
    private final long startupNanos;
    private final int removedTemps;
    /** This tier's hold on the directory; null when read-only. Guarded by this. */
    private DirectoryLock lock;
    /** Read-only: the process holding the directory when it was read, or null. */
    private final String heldBy;

    /**
     * Opens (creating it if needed) the directory and rebuilds the index from the headers there.
     *
     * @param dir          the cache directory ({@code local_disk})
     * @param capBytes     the byte cap ({@code max_local_disk_size}), {@code > 0}
     * @param minFreeBytes stores evict (or fail) rather than leave less free space on the file system
     * @param fsync        when files are synced
     * @throws UncheckedIOException naming the directory when it cannot be created or listed, or
     *                              when another tier (of this process or another) holds it
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
        try {
            if (!Files.readAttributes(dir, java.nio.file.attribute.BasicFileAttributes.class).isDirectory()) {
                throw new IllegalArgumentException(dir + ": not a directory");
            }
        } catch (java.nio.file.NoSuchFileException e) {
            throw new IllegalArgumentException(dir + ": no such directory", e);
        } catch (java.nio.file.AccessDeniedException e) {
            throw new IllegalArgumentException(dir + ": permission denied (on " + e.getFile() + ")", e);
        } catch (IOException e) {
            throw new IllegalArgumentException(dir + ": " + e.getMessage(), e);
        }
        return new DiskTier(dir, Long.MAX_VALUE, 0, FsyncPolicy.NONE, true);
    }

    /** Opens the directory; {@code readOnly} only reads and counts (nothing deleted). */
    DiskTier(Path dir, long capBytes, long minFreeBytes, FsyncPolicy fsync, boolean readOnly) {
        if (capBytes <= 0) {
            throw new IllegalArgumentException("max_local_disk_size must be > 0, was " + capBytes + " bytes");
        }
        this.capBytes = capBytes;
        this.index = new DiskIndex(dir, readOnly);
        long t0 = System.nanoTime();
        DiskEviction eviction;
        DirectoryLock held = null;
        try {
            if (!readOnly) {
                PrivateFiles.preparePrivateDirectory(dir);
                held = DirectoryLock.acquire(dir);
            }
            eviction = new DiskEviction(index, capBytes, Math.max(0, minFreeBytes), Files.getFileStore(dir));
        } catch (IOException e) {
            if (held != null) {
                held.close();
            }
            throw new UncheckedIOException("local_disk " + dir + ": " + e.getMessage(), e);
        }
        synchronized (this) {
            this.lock = held;
        }
        this.heldBy = readOnly ? DirectoryLock.holder(dir) : null;
        this.writer = new DiskWriter(index, eviction, fsync, this::restoreDirectory);
        this.reader = new DiskReader(index);
        try {
            Phoenix.open();
            this.removedTemps = IndexRebuild.rebuild(index);
        } catch (RuntimeException | Error e) {
            if (held != null) {
                held.close();
            }
            throw e;
        }
        this.startupNanos = System.nanoTime() - t0;
    }

    /**
     * For a tier opened {@link #openReadOnly read-only}: the process that held the directory
     * (wrote into it) when it was read, as its lock file names it ("pid N on HOST, since TIME"),
     * or null when none did. While one does, the temporaries found may be its stores under way.
     *
     * @return the holder, or null
     */
    public String heldBy() {
        return heldBy;
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
        return index.dir;
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

    /**
     * Chunk files found at open that this process may not read (another user's 0600 files, as
     * when {@code phoenix kv stats} runs as someone else): not counted as damaged, not deleted.
     *
     * @return files the index rebuild could not open
     */
    public int unreadableFiles() {
        return index.unreadable;
    }

    @Override
    public boolean contains(CacheKey key) {
        return index.entries.containsKey(key.toString());
    }

    @Override
    public boolean put(CacheKey key, KvLayout layout, int tokens, MemorySegment payload) {
        return putAll(layout, List.of(new Put(key, tokens, payload)))[0];
    }

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
        return writer.putAll(layout, puts);
    }

    @Override
    public boolean get(CacheKey key, MemorySegment dst) {
        return reader.get(key, dst);
    }

    /**
     * Reads the chunks' payloads in batches of about 64 MiB (at most 32 chunks), 8 batches in
     * flight, checking each batch's CRC32C while the next ones read: the depth of one large
     * read, where chunk-by-chunk reads left the disk idle between chunks.
     */
    @Override
    public boolean[] getAll(List<Get> gets) {
        return reader.getAll(gets);
    }

    /** {@link #getAll(List)} with the batch sizes and window given (tests make them small). */
    boolean[] getAll(List<Get> gets, long batchBytes, int batchChunks, int batches) {
        return reader.getAll(gets, batchBytes, batchChunks, batches);
    }

    @Override
    public void remove(CacheKey key) {
        Entry e = index.entries.remove(key.toString());
        if (e != null) {
            index.used.addAndGet(-e.fileBytes);
            DiskIndex.deleteQuietly(index.dir.resolve(e.file));
        }
    }

    /**
     * Keys held now (the index), for tools such as {@code phoenix kv stats}.
     *
     * @return a copy of the indexed keys
     */
    public List<String> keys() {
        return new ArrayList<>(index.entries.keySet());
    }

    @Override
    public TierStats stats() {
        return index.counters.snapshot(name(), index.entries.size(), index.used.get(), capBytes);
    }

    /**
     * The directory was removed (or renamed) under the tier, by someone clearing the cache while
     * it runs: every store would fail until a restart. Makes it again (0700, checked as at the
     * start), takes the new directory's lock and drops the index's entries, whose files went with
     * the old one. False when it cannot (then the stores fail, counted, as before).
     */
    synchronized boolean restoreDirectory() {
        if (index.closed() || index.readOnly || lock == null) {
            return false;
        }
        if (Files.isDirectory(index.dir)) {
            return true; // another writer restored it
        }
        try {
            PrivateFiles.preparePrivateDirectory(index.dir);
            lock.close();
            lock = null;
            lock = DirectoryLock.acquire(index.dir);
        } catch (IOException | RuntimeException e) {
            index.counters.errors.increment();
            return false;
        }
        for (var e : index.entries.entrySet()) {
            if (!Files.exists(index.dir.resolve(e.getValue().file))) {
                index.forget(e.getKey(), e.getValue());
            }
        }
        return true;
    }

    @Override
    public void close() {
        index.close();
        synchronized (this) {
            if (lock != null) {
                lock.close();
            }
        }
    }

    @Override
    public String toString() {
        return "DiskTier[" + index.dir + ", " + index.entries.size() + " chunks, " + index.used.get() + " of " + capBytes
                + " bytes]";
    }
}
