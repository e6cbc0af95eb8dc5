package io.phxfs.kvcache;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

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
    private final MemoryTier memory;
    private final DiskTier disk;
    private final RedisTier redis;
    private final List<KvTier> lower;
    private final List<KvTier> all;
    private final ExecutorService io;
    private final List<Thread> writers = new ArrayList<>();
    private final BlockingQueue<WriteJob> queue;
    private final StagingPool staging;
    private final AtomicInteger pendingWrites = new AtomicInteger();
    /** Jobs a write-behind thread takes at once: the queue shared out among the threads. */
    private final int drainMax;
    private final Object drained = new Object();
    private final LongAdder stores = new LongAdder();
    private final LongAdder retrieves = new LongAdder();
    private final LongAdder lookups = new LongAdder();
    private final LongAdder requested = new LongAdder();
    private final LongAdder retrieved = new LongAdder();
    private final LongAdder promotions = new LongAdder();
    private final LongAdder writeFailures = new LongAdder();
    private volatile boolean closed;

    private record Chunk(int index, int start, int tokens, CacheKey key) {
    }

    private record WriteJob(Chunk chunk, MemoryTier.Pinned pinned, CompletableFuture<Boolean> done) {
    }

    private static final WriteJob STOP = new WriteJob(null, null, null);

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
        MemoryTier m = null;
        DiskTier d = null;
        RedisTier r = null;
        try {
            if (config.localCpu()) {
                m = new MemoryTier(config.maxLocalCpuBytes(), chunkBytes);
            }
            if (config.localDisk() != null) {
                d = new DiskTier(config.localDisk(), config.maxLocalDiskBytes(), config.diskMinFreeBytes(), config.fsync());
            }
            if (config.remoteUrl() != null) {
                r = new RedisTier(config);
            }
        } catch (RuntimeException | Error e) {
            for (KvTier t : new KvTier[] {m, d, r}) {
                if (t != null) {
                    t.close();
                }
            }
            throw e;
        }
        this.memory = m;
        this.disk = d;
        this.redis = r;
        List<KvTier> lo = new ArrayList<>();
        if (d != null) {
            lo.add(d);
        }
        if (r != null) {
            lo.add(r);
        }
        this.lower = List.copyOf(lo);
        List<KvTier> a = new ArrayList<>();
        if (m != null) {
            a.add(m);
        }
        a.addAll(lo);
        this.all = List.copyOf(a);
        this.io = Executors.newFixedThreadPool(config.ioThreads(), daemon("kvcache-io"));
        this.queue = new ArrayBlockingQueue<>(config.writeQueueChunks());
        this.drainMax = Math.max(1, Math.min(DiskTier.GROUP, config.writeQueueChunks() / config.ioThreads()));
        this.staging = new StagingPool(chunkBytes, config.ioThreads() + 2);
        if (m != null && !lo.isEmpty()) {
            ThreadFactory tf = daemon("kvcache-write-behind");
            for (int i = 0; i < config.ioThreads(); i++) {
                Thread t = tf.newThread(this::writeBehind);
                writers.add(t);
                t.start();
            }
        }
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
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
        return all;
    }

    /**
     * The key of chunk {@code i} of a prompt whose chunk hash is {@code hash}.
     *
     * @param hash the chunk's chained hash
     * @return the key
     */
    public CacheKey key(byte[] hash) {
        return new CacheKey(config.model(), config.worldSize(), config.workerId(), ChunkHasher.hex(hash),
                layout.dtype().keyName(), Map.of());
    }

    private List<Chunk> chunks(int[] tokens, byte[] extra, boolean withPartial, int limitTokens) {
        int n = Math.min(tokens.length, limitTokens);
        ChunkHasher h = new ChunkHasher(config.chunkSize(), extra);
        int count = h.chunks(n, withPartial);
        int[] t = n == tokens.length ? tokens : java.util.Arrays.copyOf(tokens, n);
        byte[][] hashes = h.hashes(t, count);
        List<Chunk> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int start = i * config.chunkSize();
            out.add(new Chunk(i, start, Math.min(config.chunkSize(), n - start), key(hashes[i])));
        }
        return out;
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
        lookups.increment();
        List<Chunk> cs = chunks(tokens, extra, true, tokens.length);
        boolean[] held = heldChunks(cs);
        int n = 0;
        for (Chunk c : cs) {
            if (!held[c.index()]) {
                break;
            }
            n += c.tokens();
        }
        return n;
    }

    private boolean[] heldChunks(List<Chunk> cs) {
        boolean[] held = new boolean[cs.size()];
        List<Integer> remote = new ArrayList<>();
        for (Chunk c : cs) {
            held[c.index()] = memory != null && memory.contains(c.key()) || disk != null && disk.contains(c.key());
            if (!held[c.index()]) {
                if (redis == null) {
                    break; // the prefix ends here
                }
                remote.add(c.index());
            }
        }
        if (redis != null && !remote.isEmpty()) {
            boolean[] r = redis.containsEach(remote.stream().map(i -> cs.get(i).key()).toList());
            for (int i = 0; i < r.length; i++) {
                held[remote.get(i)] = r[i];
            }
        }
        return held;
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
        stores.increment();
        // the positions before the buffer's first are some other buffer's to store
        List<Chunk> cs = chunks(tokens, extra, config.saveUnfullChunk(), tokens.length).stream()
                .filter(c -> c.start() >= src.firstToken()).toList();
        List<CompletableFuture<Boolean>> done = new ArrayList<>(cs.size());
        if (memory != null) {
            for (Chunk c : cs) {
                CompletableFuture<Boolean> f = storeViaMemory(c, src);
                done.add(f);
                if (!waitAll && f.isDone() && !f.join()) {
                    break;
                }
            }
            if (!waitAll) {
                return CompletableFuture.completedFuture(prefixTokens(cs, done, true));
            }
        } else if (!storeDirectTogether(cs, src, done)) {
            for (Chunk c : cs) {
                done.add(CompletableFuture.supplyAsync(() -> storeDirect(c, src), io));
            }
        }
        return CompletableFuture.allOf(done.toArray(CompletableFuture[]::new))
                .thenApply(v -> prefixTokens(cs, done, false));
    }

    /** Tokens of the chunks from the start whose future says true; with {@code acceptedOnly} a running write counts. */
    private static int prefixTokens(List<Chunk> cs, List<CompletableFuture<Boolean>> done, boolean acceptedOnly) {
        int n = 0;
        for (int i = 0; i < done.size(); i++) {
            CompletableFuture<Boolean> f = done.get(i);
            boolean ok = acceptedOnly && !f.isDone() || f.isDone() && !f.isCompletedExceptionally() && f.join();
            if (!ok) {
                break;
            }
            n += cs.get(i).tokens();
        }
        return n;
    }

    /** Into the memory tier now; the future completes when the write-behind has written it below. */
    private CompletableFuture<Boolean> storeViaMemory(Chunk c, KvBuffer src) {
        long len = layout.bytesPerChunk(c.tokens());
        MemoryTier.Pinned p;
        if (memory.contains(c.key()) && lowerHold(c.key())) {
            return CompletableFuture.completedFuture(true);
        }
        p = memory.putPinned(c.key(), len, slot -> src.copyOut(c.start(), c.tokens(), slot));
        if (p == null) {
            // the pool is full of pinned entries (or closed): write below directly, now
            return CompletableFuture.completedFuture(!lower.isEmpty() && storeDirect(c, src));
        }
        if (lower.isEmpty()) {
            p.close();
            return CompletableFuture.completedFuture(true);
        }
        WriteJob job = new WriteJob(c, p, new CompletableFuture<>());
        pendingWrites.incrementAndGet();
        try {
            queue.put(job); // back-pressure: waits while the lower tiers are behind
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.close();
            finishWrite();
            return CompletableFuture.completedFuture(false);
        }
        return job.done();
    }

    private boolean lowerHold(CacheKey key) {
        for (KvTier t : lower) {
            if (!(t instanceof RedisTier) && !t.contains(key)) {
                return false;
            }
        }
        return true;
    }

    private void writeBehind() {
        for (;;) {
            WriteJob job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (job == STOP) {
                return;
            }
            List<WriteJob> jobs = new ArrayList<>();
            jobs.add(job);
            boolean stop = false;
            while (jobs.size() < drainMax) {
                WriteJob next = queue.poll();
                if (next == null) {
                    break;
                }
                if (next == STOP) {
                    stop = true; // one STOP per writer: this one stops after its jobs
                    break;
                }
                jobs.add(next);
            }
            writeJobs(jobs);
            if (stop) {
                return;
            }
        }
    }

    /**
     * Writes queued chunks to the lower tiers: to the disk tier as one {@link DiskTier#putAll}
     * (the chunks that were waiting are synced together), to the Redis tier as one pipelined
     * {@link RedisTier#putAll} (their SETs in flight together, over a cluster's shards at once),
     * to any other one by one.
     */
    private void writeJobs(List<WriteJob> jobs) {
        boolean[] ok = new boolean[jobs.size()];
        java.util.Arrays.fill(ok, true);
        try {
            for (KvTier t : lower) {
                if (t == disk || t == redis) {
                    List<KvTier.Put> puts = new ArrayList<>(jobs.size());
                    for (WriteJob j : jobs) {
                        puts.add(new KvTier.Put(j.chunk().key(), j.chunk().tokens(), j.pinned().segment()));
                    }
                    boolean[] r = safePutAll(t, puts);
                    for (int i = 0; i < ok.length; i++) {
                        if (!r[i]) {
                            ok[i] = false;
                            writeFailures.increment();
                        }
                    }
                } else {
                    for (int i = 0; i < ok.length; i++) {
                        if (!safePut(t, jobs.get(i).chunk(), jobs.get(i).pinned().segment())) {
                            ok[i] = false;
                            writeFailures.increment();
                        }
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            java.util.Arrays.fill(ok, false);
            writeFailures.increment();
        } finally {
            for (int i = 0; i < ok.length; i++) {
                WriteJob j = jobs.get(i);
                try {
                    j.pinned().close();
                } catch (RuntimeException | Error e) {
                    ok[i] = false;
                    writeFailures.increment();
                }
                j.done().complete(ok[i]);
                finishWrite();
            }
        }
    }

    private void finishWrite() {
        if (pendingWrites.decrementAndGet() == 0) {
            synchronized (drained) {
                drained.notifyAll();
            }
        }
    }

    private boolean safePut(KvTier t, Chunk c, MemorySegment bytes) {
        try {
            return t.put(c.key(), layout, c.tokens(), bytes);
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Without the memory tier, from a host buffer: all of the store's chunks go to each lower
     * tier in one {@link KvTier#putAll}, each tier on an I/O thread of its own: the disk tier
     * writes them as one batch, the files synced together; the Redis tier pipelines their SETs
     * (over a cluster's shards at once). False, doing nothing, when the buffer is not host
     * memory (device chunks go through the staging pool, a few at a time) or there is no lower tier.
     */
    private boolean storeDirectTogether(List<Chunk> cs, KvBuffer src, List<CompletableFuture<Boolean>> done) {
        if (lower.isEmpty() || cs.isEmpty()) {
            return false;
        }
        List<KvTier.Put> puts = new ArrayList<>(cs.size());
        for (Chunk c : cs) {
            MemorySegment view = src.hostChunk(c.start(), c.tokens());
            if (view == null) {
                return false;
            }
            puts.add(new KvTier.Put(c.key(), c.tokens(), view));
        }
        List<CompletableFuture<boolean[]>> written = new ArrayList<>(lower.size());
        for (KvTier t : lower) {
            written.add(CompletableFuture.supplyAsync(() -> safePutAll(t, puts), io));
        }
        for (int i = 0; i < cs.size(); i++) {
            int at = i;
            CompletableFuture<Boolean> f = CompletableFuture.completedFuture(true);
            for (CompletableFuture<boolean[]> w : written) {
                f = f.thenCombine(w, (a, ok) -> a && ok[at]);
            }
            done.add(f);
        }
        return true;
    }

    private boolean[] safePutAll(KvTier t, List<KvTier.Put> puts) {
        try {
            return t.putAll(layout, puts);
        } catch (RuntimeException e) {
            return new boolean[puts.size()];
        }
    }

    /** Without the memory tier: straight from the caller's buffer (or a staging copy of it) to every lower tier. */
    private boolean storeDirect(Chunk c, KvBuffer src) {
        MemorySegment view = src.hostChunk(c.start(), c.tokens());
        if (view != null) {
            return putLower(c, view);
        }
        long len = layout.bytesPerChunk(c.tokens());
        try (StagingPool.Lease s = staging.take()) {
            MemorySegment seg = s.segment().asSlice(0, len);
            src.copyOut(c.start(), c.tokens(), seg);
            return putLower(c, seg);
        }
    }

    private boolean putLower(Chunk c, MemorySegment bytes) {
        boolean ok = true;
        for (KvTier t : lower) {
            ok &= safePut(t, c, bytes);
        }
        return ok;
    }

    /**
     * Waits until the write-behind queue is empty and every queued chunk is written.
     *
     * @throws InterruptedException when interrupted while waiting
     */
    public void flush() throws InterruptedException {
        synchronized (drained) {
            while (pendingWrites.get() > 0) {
                drained.wait(100);
            }
        }
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
        retrieves.increment();
        requested.add(tokens.length);
        List<Chunk> cs = chunks(tokens, extra, true, tokens.length);
        boolean[] held = heldChunks(cs);
        List<Chunk> want = new ArrayList<>();
        for (Chunk c : cs) {
            if (!held[c.index()]) {
                break;
            }
            want.add(c);
        }
        // chunks the memory tier holds are copied in parallel; those it does not, when they go
        // straight into host memory, are read from the disk tier together (its reads of many
        // chunks in flight at once, as one large read has them: chunk by chunk, the disk idled
        // between chunks), and what the disk lacks is fetched from the tiers below, in parallel.
        // Without a disk tier the Redis tier takes that place: its GETs of all those chunks are
        // pipelined, across a cluster's shards at once, instead of one round trip per chunk
        KvTier first = lower.isEmpty() ? null : lower.getFirst();
        List<MemorySegment> views = first == null ? null : hostViews(want, dst);
        List<Integer> fromDisk = new ArrayList<>();
        List<CompletableFuture<Boolean>> fs = new ArrayList<>(want.size());
        for (int i = 0; i < want.size(); i++) {
            Chunk c = want.get(i);
            boolean inMemory = memory != null && memory.contains(c.key());
            if (views != null && !inMemory) {
                fromDisk.add(i);
                fs.add(null);
            } else {
                fs.add(CompletableFuture.supplyAsync(() -> fetch(c, dst), io));
            }
        }
        if (fromDisk.size() == 1) {
            Chunk c = want.get(fromDisk.get(0));
            fs.set(fromDisk.get(0), CompletableFuture.supplyAsync(() -> fetch(c, dst), io));
        } else if (!fromDisk.isEmpty()) {
            List<KvTier.Get> gets = fromDisk.stream().map(i -> new KvTier.Get(want.get(i).key(), views.get(i))).toList();
            CompletableFuture<boolean[]> read = CompletableFuture.supplyAsync(() -> getAllFrom(first, gets), io);
            List<KvTier> below = lower.subList(1, lower.size());
            for (int j = 0; j < fromDisk.size(); j++) {
                int at = j;
                Chunk c = want.get(fromDisk.get(j));
                MemorySegment v = views.get(fromDisk.get(j));
                fs.set(fromDisk.get(j), read.thenCompose(hit -> {
                    if (hit[at]) {
                        promote(c, v, first);
                        return CompletableFuture.completedFuture(true);
                    }
                    return below.isEmpty() ? CompletableFuture.completedFuture(false)
                            : CompletableFuture.supplyAsync(() -> fetchFrom(below, c, v), io);
                }));
            }
        }
        return CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).thenApply(v -> {
            int n = prefixTokens(want, fs, false);
            retrieved.add(n);
            return n;
        });
    }

    /** Each chunk's bytes in {@code dst} as a host segment, or null when some have to be staged. */
    private static List<MemorySegment> hostViews(List<Chunk> want, KvBuffer dst) {
        List<MemorySegment> views = new ArrayList<>(want.size());
        for (Chunk c : want) {
            MemorySegment v = dst.hostChunk(c.start(), c.tokens());
            if (v == null) {
                return null;
            }
            views.add(v);
        }
        return views;
    }

    /** A tier's reads of several chunks; a tier that throws is a miss for all of them. */
    private static boolean[] getAllFrom(KvTier t, List<KvTier.Get> gets) {
        try {
            return t.getAll(gets);
        } catch (RuntimeException e) {
            return new boolean[gets.size()];
        }
    }

    private boolean fetchFrom(List<KvTier> tiers, Chunk c, MemorySegment into) {
        for (KvTier t : tiers) {
            try {
                if (t.get(c.key(), into)) {
                    promote(c, into, t);
                    return true;
                }
            } catch (RuntimeException e) {
                // a tier that throws is a miss
            }
        }
        return false;
    }

    /** One chunk from the highest tier that has it, verified, promoted into memory. */
    private boolean fetch(Chunk c, KvBuffer dst) {
        long len = layout.bytesPerChunk(c.tokens());
        if (memory != null) {
            try (MemoryTier.Pinned p = memory.pin(c.key())) {
                if (p != null && p.segment().byteSize() == len) {
                    dst.copyIn(p.segment(), c.start(), c.tokens());
                    return true;
                }
            }
        }
        MemorySegment view = dst.hostChunk(c.start(), c.tokens());
        if (view != null) {
            KvTier hit = getLower(c, view);
            if (hit == null) {
                return false;
            }
            promote(c, view, hit);
            return true;
        }
        try (StagingPool.Lease s = staging.take()) {
            MemorySegment seg = s.segment().asSlice(0, len);
            KvTier hit = getLower(c, seg);
            if (hit == null) {
                return false;
            }
            dst.copyIn(seg, c.start(), c.tokens());
            promote(c, seg, hit);
            return true;
        }
    }

    private KvTier getLower(Chunk c, MemorySegment into) {
        for (KvTier t : lower) {
            try {
                if (t.get(c.key(), into)) {
                    return t;
                }
            } catch (RuntimeException e) {
                // a tier that throws is a miss
            }
        }
        return null;
    }

    private void promote(Chunk c, MemorySegment bytes, KvTier from) {
        if (memory != null) {
            MemoryTier.Pinned p = memory.putPinned(c.key(), bytes);
            if (p != null) {
                p.close();
                promotions.increment();
            }
        }
    }

    // ---- metrics, close ------------------------------------------------------------------

    /**
     * Counters of the engine and of every tier.
     *
     * @return a snapshot
     */
    public KvMetrics metrics() {
        List<TierStats> ts = all.stream().map(KvTier::stats).toList();
        return new KvMetrics(ts, queue.size(), config.writeQueueChunks(), stores.sum(), retrieves.sum(), lookups.sum(),
                requested.sum(), retrieved.sum(), promotions.sum(), writeFailures.sum());
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
        try {
            flush();
            for (int i = 0; i < writers.size(); i++) {
                queue.put(STOP);
            }
            for (Thread t : writers) {
                t.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        io.shutdown();
        try {
            if (!io.awaitTermination(30, TimeUnit.SECONDS)) {
                io.shutdownNow();
            }
        } catch (InterruptedException e) {
            io.shutdownNow();
            Thread.currentThread().interrupt();
        }
        for (KvTier t : all) {
            t.close();
        }
        staging.close();
    }

    @Override
    public String toString() {
        return "KvCacheEngine[" + layout.describe() + ", chunk " + config.chunkSize() + ", tiers "
                + all.stream().map(KvTier::name).toList() + "]";
    }

}
