package io.phxfs.kvcache;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One level of the cache: host memory, local disk or a remote store. Every method may be called
 * from any thread. A tier never returns bytes it cannot vouch for: a damaged, foreign or
 * unreachable entry is a miss, counted in {@link #stats()}.
 */
public interface KvTier extends AutoCloseable {
    /**
     * A short name for metrics and messages ({@code memory}, {@code disk}, {@code redis}).
     *
     * @return the tier's name
     */
    String name();

    /**
     * Whether the tier holds {@code key}, from its index alone (no payload is read).
     *
     * @param key the chunk's key
     * @return true when a {@link #get} would probably hit
     */
    boolean contains(CacheKey key);

    /**
     * Stores a chunk. A chunk already held is left as it is.
     *
     * @param key     the chunk's key
     * @param layout  the layout its bytes are in
     * @param tokens  tokens in the chunk
     * @param payload the chunk's bytes, host memory, exactly {@code layout.bytesPerChunk(tokens)} long
     * @return true when stored (or already held); false when the tier declined or failed (counted)
     */
    boolean put(CacheKey key, KvLayout layout, int tokens, MemorySegment payload);

    /**
     * One chunk of {@link #putAll}.
     *
     * @param key     the chunk's key
     * @param tokens  tokens in the chunk
     * @param payload the chunk's bytes, host memory, exactly {@code layout.bytesPerChunk(tokens)} long
     */
    record Put(CacheKey key, int tokens, MemorySegment payload) {
    }

    /**
     * Stores several chunks, each as {@link #put} would; a tier may write them together (the
     * disk tier submits them as one batch and syncs them together). Each chunk is held, and as
     * durable as the tier promises for one {@link #put}, by the time this returns true for it.
     *
     * @param layout the layout their bytes are in
     * @param puts   the chunks
     * @return per chunk, what {@link #put} would have returned
     */
    default boolean[] putAll(KvLayout layout, List<Put> puts) {
        boolean[] ok = new boolean[puts.size()];
        for (int i = 0; i < ok.length; i++) {
            Put p = puts.get(i);
            ok[i] = put(p.key(), layout, p.tokens(), p.payload());
        }
        return ok;
    }

    /**
     * Copies a chunk into {@code dst}, verified.
     *
     * @param key the chunk's key
     * @param dst host memory exactly as long as the stored payload
     * @return true on a verified hit; false on a miss, in which case {@code dst}'s bytes are undefined
     */
    boolean get(CacheKey key, MemorySegment dst);

    /**
     * One chunk of {@link #getAll}.
     *
     * @param key the chunk's key
     * @param dst host memory exactly as long as the stored payload
     */
    record Get(CacheKey key, MemorySegment dst) {
    }

    /**
     * Copies several chunks, each as {@link #get} would; a tier may read them together (the disk
     * tier keeps the reads of many chunks in flight at once, as one large read would).
     *
     * @param gets the chunks
     * @return per chunk, what {@link #get} would have returned
     */
    default boolean[] getAll(List<Get> gets) {
        boolean[] ok = new boolean[gets.size()];
        for (int i = 0; i < ok.length; i++) {
            ok[i] = get(gets.get(i).key(), gets.get(i).dst());
        }
        return ok;
    }

    /**
     * Drops a chunk if held.
     *
     * @param key the chunk's key
     */
    void remove(CacheKey key);

    /**
     * Counters and occupancy now.
     *
     * @return a snapshot
     */
    TierStats stats();

    /** Releases the tier's memory, files and connections; a second call does nothing. */
    @Override
    void close();
}
