package io.phxfs.kvcache;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
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
