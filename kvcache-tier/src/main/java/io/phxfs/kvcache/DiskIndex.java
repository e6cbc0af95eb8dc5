package io.phxfs.kvcache;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A disk tier's index of its chunk files (key to file, size, checksum, last use), the bytes they
 * take and the tier's counters: the one state that the tier's write, read and eviction paths
 * share. Each field is thread-safe on its own and no lock guards them together; removals go
 * through {@link ConcurrentHashMap#remove(Object, Object)} of the entry seen, so that of two
 * paths dropping the same file only one gives its bytes back.
 */
final class DiskIndex {
    static final String SUFFIX = ".kv";
    /** In a temporary file's name: a store under way, or one a killed process left. */
    static final String TMP = ".tmp-";

    /** One indexed chunk file. */
    static final class Entry {
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

    final Path dir;
    /** Read-only ({@code phoenix kv stats}): bad files are counted, never deleted. */
    final boolean readOnly;
    final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    /** Bytes of the indexed files plus those reserved by stores under way. */
    final AtomicLong used = new AtomicLong();
    final Counters counters = new Counters();
    /** Chunk files the index rebuild could not open (permission denied): neither indexed nor deleted. */
    volatile int unreadable;
    /** The LRU order: a use takes the next tick, so that no two entries tie. */
    private final AtomicLong clock = new AtomicLong();
    private volatile boolean closed;

    DiskIndex(Path dir, boolean readOnly) {
        this.dir = dir;
        this.readOnly = readOnly;
    }

    /** The next tick of the LRU clock, for an entry about to be indexed. */
    long tick() {
        return clock.incrementAndGet();
    }

    /** Marks the entry as the most recently used. */
    void touch(Entry e) {
        e.lastUse = clock.incrementAndGet();
    }

    /** The entry for {@code key} a read may use: none once the tier is closed. */
    Entry readable(String key) {
        return closed ? null : entries.get(key);
    }

    boolean closed() {
        return closed;
    }

    void close() {
        closed = true;
    }

    /**
     * Drops {@code e} from the index unless another thread did first (or replaced it); true
     * when this call dropped it and gave its bytes back.
     */
    boolean forget(String key, Entry e) {
        if (entries.remove(key, e)) {
            used.addAndGet(-e.fileBytes);
            return true;
        }
        return false;
    }

    /** What lies at a chunk file's name, the name itself (a symlink is not followed). */
    enum Found {
        /** A regular file: opening it neither blocks nor leaves the directory. */
        FILE,
        /** Nothing (evicted, or removed by someone else). */
        GONE,
        /** A directory: no chunk, and maybe someone's files; never deleted. */
        DIRECTORY,
        /** A symlink, FIFO, socket or device: no chunk; opening it could block or read elsewhere. */
        OTHER
    }

    /**
     * What is at {@code p}, by lstat: a chunk file is opened only when this says FILE, so that
     * a FIFO put there never blocks a read and a symlink never takes one out of the directory.
     * (A swap between this look and the open stays possible: the directory is the user's own,
     * 0700, so that would take the user racing the tier on purpose.)
     */
    static Found lstat(Path p) {
        try {
            BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return a.isRegularFile() ? Found.FILE : a.isDirectory() ? Found.DIRECTORY : Found.OTHER;
        } catch (NoSuchFileException e) {
            return Found.GONE;
        } catch (IOException e) {
            return Found.FILE; // cannot tell (the directory unreadable): the open will say
        }
    }

    /**
     * Drops an entry whose name no longer holds a chunk file this process can read (a
     * directory, a FIFO, a symlink, a file it may not read): its bytes are given back now, not at
     * the next restart, and it is counted as {@link TierStats#corrupt()}. What is there is
     * removed (a link, not its target) so that the next store of the key can write its file,
     * unless it is a directory or the tier is read-only.
     */
    void dropForeign(String key, Entry e, boolean directory) {
        if (forget(key, e)) {
            counters.corrupt.increment();
            if (!readOnly && !directory) {
                deleteQuietly(dir.resolve(e.file));
            }
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

    static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (NoSuchFileException ignored) {
            // gone already
        } catch (IOException ignored) {
            // a file that cannot be deleted stays out of the index: never served
        }
    }
}
