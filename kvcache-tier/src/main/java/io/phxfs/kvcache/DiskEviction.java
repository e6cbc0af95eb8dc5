package io.phxfs.kvcache;

import io.phxfs.kvcache.DiskIndex.Entry;
import java.io.IOException;
import java.nio.file.FileStore;
import java.util.function.BooleanSupplier;

/**
 * Keeps a disk tier within its byte cap and above its free-space watermark by deleting the least
 * recently used chunk files. Evictions take {@link #evictLock} (owned here), so that two stores
 * short of room do not both evict for the same bytes; reservations themselves are lock-free.
 */
final class DiskEviction {
    private final DiskIndex index;
    private final long capBytes;
    private final long minFreeBytes;
    private final FileStore store;
    private final Object evictLock = new Object();

    DiskEviction(DiskIndex index, long capBytes, long minFreeBytes, FileStore store) {
        this.index = index;
        this.capBytes = capBytes;
        this.minFreeBytes = minFreeBytes;
        this.store = store;
    }

    /**
     * Takes {@code bytes} of the cap and of the free-space watermark, evicting as needed; false
     * (nothing taken) when no eviction makes room, or the chunk is larger than the cap.
     */
    boolean reserve(long bytes) {
        if (bytes > capBytes) {
            return false;
        }
        long now = index.used.addAndGet(bytes);
        if (now > capBytes && !evictUntil(() -> index.used.get() <= capBytes)) {
            index.used.addAndGet(-bytes);
            return false;
        }
        if (minFreeBytes > 0 && !evictUntil(() -> usable() >= minFreeBytes + bytes)) {
            index.used.addAndGet(-bytes);
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
    private boolean evictUntil(BooleanSupplier done) {
        synchronized (evictLock) {
            while (!done.getAsBoolean()) {
                if (!evictOldest()) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Frees about {@code bytes} by eviction (after ENOSPC); false when nothing could be evicted. */
    boolean evictLru(long bytes) {
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
        for (Entry e : index.entries.values()) {
            if (best == null || e.lastUse < best.lastUse) {
                best = e;
            }
        }
        return best;
    }

    /** Evicts the least recently used chunk. The caller holds evictLock. */
    private boolean evictOldest() {
        String bestKey = null;
        Entry best = null;
        for (var me : index.entries.entrySet()) {
            if (best == null || me.getValue().lastUse < best.lastUse) {
                best = me.getValue();
                bestKey = me.getKey();
            }
        }
        if (best == null) {
            return false;
        }
        // the file goes before its bytes are given back, so that the cap holds on the disk too
        if (index.entries.remove(bestKey, best)) {
            DiskIndex.deleteQuietly(index.dir.resolve(best.file));
            index.used.addAndGet(-best.fileBytes);
            index.counters.evictions.increment();
        }
        return true;
    }
}
