package io.phxfs.serving.engine;

import io.phxfs.kvcache.KvBuffer;
import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.kvcache.KvCacheEngine;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvMetrics;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The engine's use of kvcache-tier: before a prefill, the whole chunks of the prompt that some
 * tier holds are retrieved straight into the request's cache; after it, the prompt's whole
 * chunks are stored by the write-behind. Every key carries the model's identity and layout (in
 * the chunk hash's extra bytes) and the request's cache salt, so that KV is found only by the
 * model, layout and tenant that computed it. A tier that fails costs a recompute: never an
 * error to the request, never a wrong token (what a failed retrieve wrote is overwritten by the
 * prefill, since only the positions it reports are kept).
 */
final class PrefixCache implements AutoCloseable {
    private final KvCacheEngine engine;
    private final byte[] identity;
    private final int chunk;
    private final AtomicBoolean warned = new AtomicBoolean();

    PrefixCache(KvCacheConfig config, KvLayout layout, String modelIdentity) {
        this.engine = new KvCacheEngine(config, layout);
        this.chunk = config.chunkSize();
        this.identity = (modelIdentity + "|" + layout.describe()).getBytes(StandardCharsets.UTF_8);
    }

    int chunkSize() {
        return chunk;
    }

    /** The tier's key bytes for a request: the model's identity and layout, then its cache salt. */
    byte[] extra(String salt) {
        if (salt == null || salt.isEmpty()) {
            return identity;
        }
        byte[] s = salt.getBytes(StandardCharsets.UTF_8);
        byte[] e = Arrays.copyOf(identity, identity.length + 1 + s.length);
        e[identity.length] = 0;
        System.arraycopy(s, 0, e, identity.length + 1, s.length);
        return e;
    }

    /**
     * The longest run of whole chunks at the prompt's start that some tier holds, leaving at
     * least the last prompt token to the prefill (its logits choose the first new token).
     */
    int lookup(int[] prompt, byte[] extra) {
        int limit = (prompt.length - 1) / chunk * chunk;
        if (limit == 0) {
            return 0;
        }
        try {
            return engine.lookup(Arrays.copyOf(prompt, limit), extra) / chunk * chunk;
        } catch (RuntimeException e) {
            warnOnce("lookup", e);
            return 0;
        }
    }

    /** Retrieves the chunks of {@code tokens} into {@code dst}; the tokens filled from the start. Throws what the tier throws. */
    int retrieve(int[] tokens, byte[] extra, KvBuffer dst) {
        return engine.retrieve(tokens, extra, dst);
    }

    /**
     * Fills {@code kv} with the first {@code hit} positions of the prompt (as {@link #lookup}
     * found them); the whole chunks it got. A failure costs a recompute.
     */
    int reuse(int[] prompt, int hit, byte[] extra, SequenceKv kv) {
        if (hit <= 0) {
            return 0;
        }
        try {
            int got = engine.retrieve(Arrays.copyOf(prompt, hit), extra, kv.tensors());
            return Math.max(0, Math.min(hit, got)) / chunk * chunk;
        } catch (RuntimeException e) {
            warnOnce("retrieve", e);
            return 0;
        }
    }

    /**
     * Stores the prompt's whole chunks from {@code kv}; the future says when the tiers are done
     * reading it. A cache that continues a shared prefix holds only the positions after it: its
     * chunks are stored only while the tier still holds the prefix's (a later lookup would stop
     * at the gap anyway).
     */
    CompletableFuture<Integer> store(int[] prompt, byte[] extra, SequenceKv kv) {
        int whole = prompt.length / chunk * chunk;
        int first = kv.firstPosition();
        if (whole == 0 || whole <= first) {
            return CompletableFuture.completedFuture(0);
        }
        try {
            if (first > 0 && engine.lookup(Arrays.copyOf(prompt, first), extra) < first) {
                return CompletableFuture.completedFuture(0);
            }
            return engine.storeAsync(Arrays.copyOf(prompt, whole), extra, kv.tensors())
                    .exceptionally(e -> {
                        warnOnce("store", e);
                        return 0;
                    });
        } catch (RuntimeException e) {
            warnOnce("store", e);
            return CompletableFuture.completedFuture(0);
        }
    }

    private void warnOnce(String what, Throwable e) {
        if (warned.compareAndSet(false, true)) {
            System.err.println("phoenix serve: the KV tier's " + what + " failed (" + e
                    + "); requests recompute instead (said once)");
        }
    }

    /** The tier itself, for tests that store and look up chunks directly. */
    KvCacheEngine tierForTest() {
        return engine;
    }

    byte[] extraForTest(String salt) {
        return extra(salt);
    }

    KvMetrics metrics() {
        return engine.metrics();
    }

    @Override
    public void close() {
        engine.close();
    }
}
