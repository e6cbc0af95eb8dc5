package io.phxfs.kvcache;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Stores, looks up and retrieves the KV cache of token prefixes, chunk by chunk, through up to
 * three tiers: host memory ({@link MemoryTier}), local disk ({@link DiskTier}) and Redis
 * ({@link RedisTier}).
 *
 * <ul>
 * <li>{@link #store} puts each chunk into the memory tier (one copy out of the caller's buffer,
 *     which the caller may reuse once the call returns) and queues it for the tiers below: a
 *     write-behind with a bounded queue, whose bound makes a store wait when the lower tiers fall
 *     behind. Without a memory tier the chunks are written to the tiers below before the call
 *     returns. {@link #storeAsync}'s future completes once every tier has the chunks.</li>
 * <li>{@link #lookup} says how many tokens of a prompt's prefix are held, in any tier, stopping
 *     at the first chunk none holds.</li>
 * <li>{@link #retrieve} fills that prefix into the caller's buffer and returns the tokens filled;
 *     a chunk found below the memory tier is promoted into it. A chunk that turns out damaged or
 *     gone ends the prefix there: bytes of the buffer past the returned count are undefined.</li>
 * </ul>
 *
 * <p>Tier failures (a full disk, a Redis server away) are misses or failed stores, counted in
 * {@link #metrics()}, never exceptions to the caller. Source and destination may be host or
 * device memory ({@link ChunkedKv}, {@link KvTensors}); device memory moves through Phoenix.
 *
 * <p>Thread-safe: any number of threads may store and retrieve at once.
 */
public final class KvCacheEngine implements AutoCloseable {
    private final KvCacheConfig config;
    private final KvLayout layout;
    private final TierStack tiers;
    private final PromptChunks chunks;
    private final ExecutorService io;
    private final WriteBehind writeBehind;
    private final StagingPool staging;
    private final StorePath storePath;
    private final RetrievePath retrievePath;
    private final EngineCounters counters = new EngineCounters();
    private volatile boolean closed;

    /**
     * Opens the tiers the configuration names.
     *
     * @param config the settings
     * @param layout the layout of the model's KV cache
     * @throws IllegalArgumentException when a setting does not fit the layout (a memory pool smaller than a chunk)
     */
    public KvCacheEngine(KvCacheConfig config, KvLayout layout) {
        this.config = config;
        this.layout = layout;
        long chunkBytes = layout.bytesPerChunk(config.chunkSize());
        this.tiers = new TierStack(config, layout, chunkBytes);
        ExecutorService ioThreads = null;
        WriteBehind writers = null;
        try {
            this.chunks = new PromptChunks(config, layout);
            this.io = ioThreads = Executors.newFixedThreadPool(config.ioThreads(), WriteBehind.daemon("kvcache-io"));
            this.writeBehind = writers = new WriteBehind(tiers, config.writeQueueChunks(), config.ioThreads(),
                    counters.writeFailures);
            this.staging = new StagingPool(chunkBytes, config.ioThreads() + 2);
            if (tiers.memory != null && !tiers.lower.isEmpty()) {
                writers.start(WriteBehind.daemon("kvcache-write-behind"));
            }
        } catch (RuntimeException | Error e) {
            // no engine is returned to close them: the tiers opened above (files, connections)
            // and the threads started would otherwise outlive the failed constructor
            if (writers != null) {
                writers.close();
            }
            if (ioThreads != null) {
                ioThreads.shutdownNow();
            }
            try {
                tiers.close();
            } catch (RuntimeException | Error c) {
                e.addSuppressed(c);
            }
            throw e;
        }
        this.storePath = new StorePath(layout, chunks, config.saveUnfullChunk(), tiers, io, staging, writeBehind);
        this.retrievePath = new RetrievePath(layout, chunks, tiers, io, staging, counters);
    }

    /**
     * Opens an engine from a YAML or JSON file ({@link KvCacheConfig#load}).
     *
     * @param configFile the settings file
     * @param layout     the layout of the model's KV cache
     * @return the engine
     */
    public static KvCacheEngine open(java.nio.file.Path configFile, KvLayout layout) {
        return new KvCacheEngine(KvCacheConfig.load(configFile), layout);
    }

    /**
     * The settings.
     *
     * @return the configuration the engine was opened with
     */
    public KvCacheConfig config() {
        return config;
    }

    /**
     * The KV layout.
     *
     * @return the layout chunks are stored in
     */
    public KvLayout layout() {
        return layout;
    }

    /**
     * The tiers, top first.
     *
     * @return memory, disk and Redis, those configured
     */
    public List<KvTier> tiers() {
        return tiers.all;
    }

    /**
     * The key of chunk {@code i} of a prompt whose chunk hash is {@code hash}.
     *
     * @param hash the chunk's chained hash
     * @return the key
     */
    public CacheKey key(byte[] hash) {
        return chunks.key(hash);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("KvCacheEngine is closed");
        }
    }

    private void checkBuffer(KvBuffer buf, int[] tokens, String what) {
        if (!buf.layout().equals(layout)) {
            throw new IllegalArgumentException(what + ": buffer layout " + buf.layout().describe() + " is not the engine's "
                    + layout.describe());
        }
        if (buf instanceof ChunkedKv c && c.chunkSize() != config.chunkSize()) {
            throw new IllegalArgumentException(what + ": buffer chunk size " + c.chunkSize() + " is not the engine's "
                    + config.chunkSize());
        }
        if (tokens.length > buf.capacityTokens()) {
            throw new IllegalArgumentException(what + ": " + tokens.length + " tokens do not fit " + buf);
        }
    }

    // ---- lookup --------------------------------------------------------------------------

    /**
     * How many tokens of the prefix of {@code tokens} are held, counting whole stored chunks from
     * the start and stopping at the first chunk no tier holds. Reads no payload: a Redis tier
     * is asked once for all the chunks the local tiers lack.
     *
     * @param tokens the prompt's token ids
     * @return tokens held, a multiple of the chunk size unless a stored partial chunk ends it
     */
    public int lookup(int[] tokens) {
        return lookup(tokens, null);
    }

    /**
     * Like {@link #lookup(int[])} for chunks stored with extra keys (a LoRA adapter's id, the
     * hashes of a prompt's images): they are part of every chunk's hash.
     *
     * @param tokens the prompt's token ids
     * @param extra  extra key bytes, or null for none
     * @return tokens held
     */
    public int lookup(int[] tokens, byte[] extra) {
        checkOpen();
        counters.lookups.increment();
        List<PromptChunks.Chunk> cs = chunks.chunks(tokens, extra, true, tokens.length);
        boolean[] held = tiers.held(cs);
        int n = 0;
        for (PromptChunks.Chunk c : cs) {
            if (!held[c.index()]) {
                break;
            }
            n += c.tokens();
        }
        return n;
    }

    // ---- store ---------------------------------------------------------------------------

    /**
     * Stores the KV cache of {@code tokens}, chunk by chunk, from {@code src} (which holds the
     * cache of the same tokens from its token 0): into the memory tier now, into the tiers below
     * by the write-behind. Waits while the write-behind queue is full. Chunks already held are
     * not copied again. A partial last chunk is stored only with {@code save_unfull_chunk}.
     *
     * @param tokens the prompt's token ids
     * @param src    the cache of those tokens, host or device memory
     * @return tokens stored (or already held) from the start, up to the first chunk no tier took
     */
    public int store(int[] tokens, KvBuffer src) {
        return store(tokens, null, src);
    }

    /**
     * Like {@link #store(int[], KvBuffer)} with extra keys in every chunk's hash.
     *
     * @param tokens the prompt's token ids
     * @param extra  extra key bytes, or null for none
     * @param src    the cache of those tokens
     * @return tokens stored from the start
     */
    public int store(int[] tokens, byte[] extra, KvBuffer src) {
        try {
            return storeChunks(tokens, extra, src, false).join();
        } catch (CompletionException e) {
            throw rethrow(e);
        }
    }

    /**
     * Like {@link #store}, but the future completes when every tier has written the chunks (or
     * failed to): its value is the tokens that every tier took, from the start. The copy out of
     * {@code src} happens before this method returns when a memory tier is on; without one the
     * caller must leave {@code src} alone until the future completes.
     *
     * @param tokens the prompt's token ids
     * @param src    the cache of those tokens
     * @return the tokens every tier holds, when they are written
     */
    public CompletableFuture<Integer> storeAsync(int[] tokens, KvBuffer src) {
        return storeAsync(tokens, null, src);
    }

    /**
     * Like {@link #storeAsync(int[], KvBuffer)} with extra keys in every chunk's hash.
     *
     * @param tokens the prompt's token ids
     * @param extra  extra key bytes, or null for none
     * @param src    the cache of those tokens
     * @return the tokens every tier holds, when they are written
     */
    public CompletableFuture<Integer> storeAsync(int[] tokens, byte[] extra, KvBuffer src) {
        return storeChunks(tokens, extra, src, true);
    }

    private CompletableFuture<Integer> storeChunks(int[] tokens, byte[] extra, KvBuffer src, boolean waitAll) {
        checkOpen();
        checkBuffer(src, tokens, "store");
        counters.stores.increment();
        return storePath.store(tokens, extra, src, waitAll);
    }

    /**
     * Waits until the write-behind queue is empty and every queued chunk is written.
     *
     * @throws InterruptedException when interrupted while waiting
     */
    public void flush() throws InterruptedException {
        writeBehind.flush();
    }

    // ---- retrieve ------------------------------------------------------------------------

    /**
     * Fills the held prefix of {@code tokens}' KV cache into {@code dst} (token 0 of the prompt
     * at token 0 of the buffer) and returns how many tokens it filled: whole chunks from the
     * start, up to the first chunk no tier holds (or whose bytes fail verification). Chunks
     * found below the memory tier are promoted into it.
     *
     * @param tokens the prompt's token ids
     * @param dst    where the cache goes, host or device memory
     * @return tokens filled; bytes past them are undefined
     */
    public int retrieve(int[] tokens, KvBuffer dst) {
        return retrieve(tokens, null, dst);
    }

    /**
     * Like {@link #retrieve(int[], KvBuffer)} for chunks stored with extra keys.
     *
     * @param tokens the prompt's token ids
     * @param extra  extra key bytes, or null for none
     * @param dst    where the cache goes
     * @return tokens filled
     */
    public int retrieve(int[] tokens, byte[] extra, KvBuffer dst) {
        try {
            return retrieveAsync(tokens, extra, dst).join();
        } catch (CompletionException e) {
            throw rethrow(e);
        }
    }

    /**
     * Like {@link #retrieve}, returning at once; chunks are fetched in parallel on the engine's
     * I/O threads. {@code dst} must be left alone until the future completes.
     *
     * @param tokens the prompt's token ids
     * @param dst    where the cache goes
     * @return the tokens filled, when they are
     */
    public CompletableFuture<Integer> retrieveAsync(int[] tokens, KvBuffer dst) {
        return retrieveAsync(tokens, null, dst);
    }

    /**
     * Like {@link #retrieveAsync(int[], KvBuffer)} for chunks stored with extra keys.
     *
     * @param tokens the prompt's token ids
     * @param extra  extra key bytes, or null for none
     * @param dst    where the cache goes
     * @return the tokens filled, when they are
     */
    public CompletableFuture<Integer> retrieveAsync(int[] tokens, byte[] extra, KvBuffer dst) {
        checkOpen();
        checkBuffer(dst, tokens, "retrieve");
        counters.retrieves.increment();
        counters.requested.add(tokens.length);
        return retrievePath.retrieve(tokens, extra, dst);
    }

    // ---- metrics, close ------------------------------------------------------------------

    /**
     * Counters of the engine and of every tier.
     *
     * @return a snapshot
     */
    public KvMetrics metrics() {
        return counters.snapshot(tiers.all, writeBehind.depth(), config.writeQueueChunks());
    }

    private static RuntimeException rethrow(CompletionException e) {
        Throwable c = e.getCause();
        if (c instanceof RuntimeException r) {
            return r;
        }
        if (c instanceof Error err) {
            throw err;
        }
        return e;
    }

    /**
     * Finishes the queued writes, stops the threads and closes every tier; a second call does
     * nothing.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        writeBehind.close();
        io.shutdown();
        try {
            if (!io.awaitTermination(30, TimeUnit.SECONDS)) {
                io.shutdownNow();
            }
        } catch (InterruptedException e) {
            io.shutdownNow();
            Thread.currentThread().interrupt();
        }
        tiers.close();
        staging.close();
    }

    @Override
    public String toString() {
        return "KvCacheEngine[" + layout.describe() + ", chunk " + config.chunkSize() + ", tiers "
                + tiers.all.stream().map(KvTier::name).toList() + "]";
    }
}
