package io.phxfs.serving.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.djl.KvCache;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.serving.text.HfTokenizer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Continuous batching, iteration by iteration (Orca's and vLLM's scheduling): between two
 * decode steps, waiting requests join the batch while there is room (their caches filled from
 * the prefix cache where it holds their prompt's start), finished or cancelled ones leave, one
 * piece of at most {@link #PREFILL_CHUNK} prompt tokens is prefilled (chunked prefill: a long
 * prompt delays the running requests' next token by one piece, not by its whole prefill), then
 * one decode step computes the next token of
 * every running request together. One thread runs it all, so the model and the caches have one
 * owner.
 */
final class Scheduler implements Runnable {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
    private final List<Sequence> running = new ArrayList<>();
    /** Admitted requests whose prompt is not yet all in their cache, oldest first. */
    private final ArrayDeque<Sequence> prefilling = new ArrayDeque<>();
    /** Prompt tokens prefilled between two decode steps while others are decoding. */
    static final int PREFILL_CHUNK = 256;
    /** PHX_SERVE_TRACE=1: one line per request on stderr with where its time to first token went. */
    private static final boolean TRACE = "1".equals(System.getenv("PHX_SERVE_TRACE"));
    private final int maxRunning;
    private final int maxWaiting;
    private final CausalLmBlock block;
    private final NDManager manager;
    private final HfTokenizer tokenizer;
    private final Set<Integer> eos;
    private final PrefixCache prefix;
    private final KvLayout layout;
    private final EngineObserver observer;
    /** Where the requests' caches live (host memory kept for reuse, or the model's GPU). */
    private final KvMemory kvMemory;
    /** Prefixes the running requests share (null without a prefix cache). */
    private final SharedPrefixes sharedPrefixes;
    /** Requests accepted and not yet ended: waiting, being prefilled or running. */
    private final java.util.concurrent.atomic.AtomicInteger active = new java.util.concurrent.atomic.AtomicInteger();
    private volatile int runningCount;
    private volatile int waitingCount;
    private boolean closing;

    Scheduler(CausalLmBlock block, NDManager manager, HfTokenizer tokenizer, Set<Integer> eos, PrefixCache prefix,
              KvLayout layout, EngineConfig config) {
        this.block = block;
        this.manager = manager;
        this.tokenizer = tokenizer;
        this.eos = eos;
        this.prefix = prefix;
        this.layout = layout;
        this.maxRunning = config.maxRunning();
        this.maxWaiting = config.maxWaiting();
        this.observer = config.observer();
        long perRequest = 2L * block.layers() * block.kvHeads() * block.headDim() * block.dtype().getNumOfBytes()
                * block.contextLength();
        // host: keep what a full batch at full context needs, at most 2 GiB
        this.kvMemory = config.device() == null ? KvMemory.host(Math.min(2L << 30, perRequest * maxRunning))
                : KvMemory.device(config.device());
        long idle = config.idlePrefixBytes() == EngineConfig.AUTO ? Math.min(4L << 30, perRequest * maxRunning / 2)
                : config.idlePrefixBytes();
        this.sharedPrefixes = prefix == null ? null : new SharedPrefixes(kvMemory, block, manager, layout,
                prefix.chunkSize(), idle);
    }

    /** {@link SharedPrefixes#counts()}, read after the loop has settled (tests). */
    long[] sharedPrefixCounts() {
        return sharedPrefixes == null ? new long[3] : sharedPrefixes.counts();
    }

    /** Frees the kept cache memory; after the loop has ended and the tier's stores have read their buffers. */
    void releaseMemory() {
        if (sharedPrefixes != null) {
            sharedPrefixes.close();
        }
        kvMemory.close();
    }

    int running() {
        return runningCount;
    }

    int waiting() {
        return waitingCount;
    }

    void submit(Sequence s) {
        lock.lock();
        try {
            if (closing) {
                throw new IllegalStateException("the engine is shutting down");
            }
            if (fatal != null) {
                throw new IllegalStateException("the engine stopped: " + fatal);
            }
            if (active.get() >= maxRunning + maxWaiting) {
                throw new QueueFullException("the server is busy: " + (active.get() - waiting.size()) + " requests running and "
                        + waiting.size() + " waiting (at most " + maxRunning + " and " + maxWaiting + "); retry later");
            }
            active.incrementAndGet();
            s.onCancel = this::wake;
            waiting.add(s);
            waitingCount = waiting.size();
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Refuses new work; the loop ends once the queued and running requests are done. */
    void shutdown() {
        lock.lock();
        try {
            closing = true;
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes the loop: a waiting request was cancelled, and its slot should free now. */
    void wake() {
        lock.lock();
        try {
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Why the loop died, or null while it runs: submit refuses with it, health reports it. */
    private volatile Throwable fatal;

    Throwable fatal() {
        return fatal;
    }

    @Override
    public void run() {
        try {
            loop();
        } catch (Throwable t) {
            // a bug or an Error (out of memory) in the loop: nothing may hang waiting for a token
            fatal = t;
            System.err.println("phoenix serve: the engine stopped: " + t);
            List<Sequence> all = new ArrayList<>(running);
            all.addAll(prefilling);
            lock.lock();
            try {
                closing = true;
                all.addAll(waiting);
                waiting.clear();
                waitingCount = 0;
            } finally {
                lock.unlock();
            }
            running.clear();
            prefilling.clear();
            runningCount = 0;
            for (Sequence s : all) {
                fail(s, new IllegalStateException("the engine stopped: " + t, t));
            }
        }
    }

    private void loop() {
        while (true) {
            List<Sequence> admitted = new ArrayList<>();
            List<Sequence> dropped = new ArrayList<>();
            lock.lock();
            try {
                while (waiting.isEmpty() && running.isEmpty() && prefilling.isEmpty()) {
                    if (closing) {
                        return;
                    }
                    work.awaitUninterruptibly();
                }
                // cancelled while waiting (their clients left): out of the queue at once, so
                // that they hold no slot until a running request ends
                for (Iterator<Sequence> it = waiting.iterator(); it.hasNext(); ) {
                    Sequence w = it.next();
                    if (w.cancelled()) {
                        it.remove();
                        dropped.add(w);
                    }
                }
                while (!waiting.isEmpty() && running.size() + prefilling.size() + admitted.size() < maxRunning) {
                    admitted.add(waiting.poll());
                }
                waitingCount = waiting.size();
            } finally {
                lock.unlock();
            }
            for (Sequence d : dropped) {
                d.scheduledNanos = System.nanoTime();
                finish(d, FinishReason.CANCELLED);
            }
            for (Sequence s : admitted) {
                if (s.cancelled()) {
                    s.scheduledNanos = System.nanoTime();
                    finish(s, FinishReason.CANCELLED);
                    continue;
                }
                admit(s);
                if (!s.done) {
                    prefilling.add(s);
                }
            }
            // counted before the prefill: its first token may reach the client before it returns
            runningCount = running.size() + prefilling.size();
            prefillPiece();
            runningCount = running.size() + prefilling.size();
            step();
            runningCount = running.size() + prefilling.size();
        }
    }

    /** A new request's cache, partly filled from the prefix cache. */
    private void admit(Sequence s) {
        s.scheduledNanos = System.nanoTime();
        observe(() -> observer.scheduled((s.scheduledNanos - s.arrivedNanos) / 1e9));
        int[] prompt = s.request.promptIds();
        try {
            s.startText(tokenizer);
            int maxTokens = s.request.sampling().maxTokens();
            if (prefix == null) {
                s.kv = new SequenceKv(this::allocateKv, block, manager, null, prompt.length + maxTokens, layout);
            } else {
                byte[] extra = prefix.extra(s.request.cacheSalt());
                int hit = prefix.lookup(prompt, extra);
                // a prefix the running batch already holds is used in place; else the first
                // request with it fills a shared block from the tier
                SharedPrefixes.Block common = hit == 0 ? null : sharedPrefixes.acquire(prompt, hit, extra, prefix);
                int base = common == null ? 0 : common.length();
                s.kv = new SequenceKv(this::allocateKv, block, manager, common, prompt.length - base + maxTokens, layout);
                if (common == null && hit > 0) {
                    int reused = kvMemory.onDevice()
                            ? deviceReuse(prompt, hit, extra, s.kv)
                            : prefix.reuse(prompt, hit, extra, s.kv);
                    if (reused > 0) {
                        s.kv.cache().setLength(reused);
                    }
                }
            }
            int reused = s.kv.cache().length();
            s.cachedTokens = reused;
            s.cacheReadyNanos = System.nanoTime();
            if (prefix != null) {
                observe(() -> observer.prefixCache(prompt.length, reused));
            }
        } catch (RuntimeException e) {
            fail(s, e);
        }
    }

    /** Memory for a request's cache: idle prefix blocks give way when there is none. */
    private RegisteredBuffer allocateKv(long bytes) {
        try {
            return kvMemory.allocate(bytes);
        } catch (RuntimeException | OutOfMemoryError e) {
            if (sharedPrefixes == null || !sharedPrefixes.evictIdle()) {
                throw e;
            }
            return kvMemory.allocate(bytes);
        }
    }

    /** {@link PrefixCache#reuse} for a cache on a GPU; a failure costs a recompute. */
    private int deviceReuse(int[] prompt, int hit, byte[] extra, SequenceKv kv) {
        try {
            return DeviceChunkFill.fill(prefix, java.util.Arrays.copyOf(prompt, hit), extra, layout, kvMemory, kv.keyArrays(),
                    kv.valueArrays(), block.dtype(), manager);
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /**
     * Prefills the oldest prefilling request by one piece; a request whose prompt is then
     * complete gets its first token and joins the running batch.
     */
    private void prefillPiece() {
        Sequence s = prefilling.peek();
        while (s != null && (s.done || s.cancelled())) {
            prefilling.poll();
            if (!s.done) {
                finish(s, FinishReason.CANCELLED);
            }
            s = prefilling.peek();
        }
        if (s == null) {
            return;
        }
        int[] prompt = s.request.promptIds();
        KvCache cache = s.kv.cache();
        int from = cache.length();
        // pieces end at multiples of PREFILL_CHUNK (the tier's chunk size), whatever else runs:
        // a position's keys and values are then computed by the same products whether its chunk
        // came from a tier or not and however loaded the server is, so the KV a tier holds is the
        // KV a recompute would give (float sums depend on the product's shape). Not so after a
        // shared prefix: its attention is two products whose parts are added, so the positions
        // after it round differently in the last bits (SharedPrefixTest: within 1e-4 of the
        // logits; the engine's tests: the same tokens as the tier off)
        int to = Math.min(prompt.length, (from / PREFILL_CHUNK + 1) * PREFILL_CHUNK);
        try {
            float[] last;
            try (NDManager step = manager.newSubManager()) {
                long[] piece = new long[to - from];
                for (int i = 0; i < piece.length; i++) {
                    piece[i] = prompt[from + i];
                }
                boolean end = to == prompt.length;
                // only the last position's logits are used: the LM head for the others (T x vocab
                // floats) is neither computed nor held
                long t0 = System.nanoTime();
                NDArray logits = block.prefill(step.create(piece), cache, end);
                last = end ? logits.get(0).toFloatArray() : null;
                s.prefillNanos += System.nanoTime() - t0;
                s.prefillPieces++;
            }
            if (last == null) {
                return; // more pieces to come
            }
            prefilling.remove(s);
            Sequence started = s;
            safely(started, () -> started.listener.onStart(prompt.length, started.cachedTokens));
            emit(started, started.sampler.next(last, eos));
            // after the first token, off its path: the tiers copy the prompt's chunks out while
            // decoding goes on. Nothing to store when every whole chunk came from a tier.
            int whole = prefix == null ? 0 : prompt.length / prefix.chunkSize() * prefix.chunkSize();
            if (prefix != null && whole > started.cachedTokens && !started.kv.isClosed()) {
                started.kv.readBy(prefix.store(prompt, prefix.extra(started.request.cacheSalt()), started.kv));
            }
            if (!started.done) {
                running.add(started);
            }
        } catch (RuntimeException e) {
            prefilling.remove(s);
            fail(s, e);
        }
    }

    private void step() {
        for (Iterator<Sequence> it = running.iterator(); it.hasNext(); ) {
            Sequence s = it.next();
            if (s.cancelled() && !s.done) {
                finish(s, FinishReason.CANCELLED);
            }
            if (s.done) {
                it.remove();
            }
        }
        if (running.isEmpty()) {
            return;
        }
        int b = running.size();
        long[] ids = new long[b];
        KvCache[] caches = new KvCache[b];
        for (int r = 0; r < b; r++) {
            ids[r] = running.get(r).lastToken;
            caches[r] = running.get(r).kv.cache();
        }
        float[] all;
        int vocab = block.vocabSize();
        try (NDManager step = manager.newSubManager()) {
            all = block.decode(step, ids, caches).toFloatArray();
        } catch (RuntimeException e) {
            for (Sequence s : running) {
                fail(s, e);
            }
            running.clear();
            return;
        }
        for (int r = 0; r < b; r++) {
            Sequence s = running.get(r);
            float[] row = new float[vocab];
            System.arraycopy(all, r * vocab, row, 0, vocab);
            try {
                emit(s, s.sampler.next(row, eos));
            } catch (RuntimeException e) {
                fail(s, e);
            }
        }
        running.removeIf(s -> s.done);
    }

    private void emit(Sequence s, int token) {
        long now = System.nanoTime();
        s.generated++;
        if (s.generated == 1) {
            s.firstTokenNanos = now;
            observe(() -> observer.firstToken((now - s.arrivedNanos) / 1e9, (now - s.scheduledNanos) / 1e9));
            if (TRACE) {
                System.err.printf(java.util.Locale.ROOT, "phoenix serve: trace %s: queued %.1f ms, cache ready %.1f ms (%d of %d"
                                + " tokens reused), prefill %.1f ms in %d pieces, first token %.1f ms after arrival%n", s.id(),
                        (s.scheduledNanos - s.arrivedNanos) / 1e6, (s.cacheReadyNanos - s.scheduledNanos) / 1e6, s.cachedTokens,
                        s.promptTokens(), s.prefillNanos / 1e6, s.prefillPieces, (now - s.arrivedNanos) / 1e6);
            }
        } else {
            long previous = s.lastTokenNanos;
            observe(() -> observer.token((now - previous) / 1e9));
        }
        s.lastTokenNanos = now;
        s.lastToken = token;
        SamplingParams sp = s.request.sampling();
        boolean end = s.sampler.guided() ? s.sampler.guidedEnd()
                : eos.contains(token) && !sp.ignoreEos() || sp.stopTokenIds().contains(token);
        // as vLLM's: the token that ended the generation is not in the text unless asked for, and
        // no stop string ends it before min_tokens
        String added = end && !sp.includeStopStrInOutput() ? "" : s.detokenizer.add(token);
        String text = s.generated < sp.minTokens() ? added : s.stops.accept(added);
        FinishReason reason = null;
        // a guided output that is a whole value ends with its last byte (no end token needed)
        if (s.stops.stopped() || end || s.sampler.guideFinished()) {
            reason = FinishReason.STOP;
        } else if (s.generated >= s.request.sampling().maxTokens() || s.kv.cache().length() + 1 > s.kv.capacity()) {
            reason = FinishReason.LENGTH;
        }
        if (reason != null && !s.stops.stopped()) {
            text += s.stops.accept(s.detokenizer.flush());
            text += s.stops.drain();
        }
        String piece = text;
        safely(s, () -> s.listener.onText(piece, new int[] {token}));
        if (reason != null) {
            finish(s, reason);
        }
    }

    private void finish(Sequence s, FinishReason reason) {
        if (s.done) {
            return;
        }
        s.done = true;
        active.decrementAndGet();
        if (s.kv != null) {
            s.kv.close();
        }
        long now = System.nanoTime();
        observe(() -> observer.finished(reason, (now - s.arrivedNanos) / 1e9,
                s.firstTokenNanos == 0 ? 0 : (now - s.firstTokenNanos) / 1e9, s.usage()));
        try {
            s.listener.onFinish(reason, s.usage());
        } catch (RuntimeException e) {
            // the listener's own failure: the request is over either way
        }
    }

    private void fail(Sequence s, Throwable e) {
        if (s.done) {
            return;
        }
        s.done = true;
        active.decrementAndGet();
        if (s.kv != null) {
            s.kv.close();
        }
        try {
            s.listener.onError(e);
        } catch (RuntimeException ignored) {
            // nothing more to tell it
        }
    }

    /** An observer that throws (a metrics bug) costs its figure, never the engine. */
    private static void observe(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            // the figure is lost; the requests go on
        }
    }

    /** A listener that throws (its client went away) cancels its own request, not the batch. */
    private static void safely(Sequence s, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            s.cancel();
        }
    }
}
