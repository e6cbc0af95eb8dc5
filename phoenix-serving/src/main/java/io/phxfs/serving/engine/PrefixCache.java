package io.phxfs.serving.engine;

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

    private byte[] extra(String salt) {
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
     * Fills {@code kv} with the longest run of whole cached chunks at the prompt's start, leaving
     * at least the last prompt token to the prefill (its logits choose the first new token).
     * Returns the tokens filled.
     */
    int reuse(int[] prompt, String salt, SequenceKv kv) {
        int limit = (prompt.length - 1) / chunk * chunk;
        if (limit == 0) {
            return 0;
        }
        try {
            byte[] extra = extra(salt);
            int[] prefix = Arrays.copyOf(prompt, limit);
            int hit = engine.lookup(prefix, extra) / chunk * chunk;
            if (hit == 0) {
                return 0;
            }
            int got = engine.retrieve(Arrays.copyOf(prompt, hit), extra, kv.tensors());
            return Math.max(0, Math.min(hit, got)) / chunk * chunk;
        } catch (RuntimeException e) {
            warnOnce("retrieve", e);
            return 0;
        }
    }

    /** Stores the prompt's whole chunks from {@code kv}; the future says when the tiers are done reading it. */
    CompletableFuture<Integer> store(int[] prompt, String salt, SequenceKv kv) {
        int whole = prompt.length / chunk * chunk;
        if (whole == 0) {
            return CompletableFuture.completedFuture(0);
        }
        try {
            return engine.storeAsync(Arrays.copyOf(prompt, whole), extra(salt), kv.tensors())
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
