package io.phxfs.kvcache;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Cuts a prompt into the engine's chunks and gives each its key. */
final class PromptChunks {
    /** Chunk {@code index} of a prompt: tokens {@code [start, start + tokens)}, stored under {@code key}. */
    record Chunk(int index, int start, int tokens, CacheKey key) {
    }

    private final KvCacheConfig config;
    private final KvLayout layout;

    PromptChunks(KvCacheConfig config, KvLayout layout) {
        this.config = config;
        this.layout = layout;
    }

    /** {@link KvCacheEngine#key}. */
    CacheKey key(byte[] hash) {
        return new CacheKey(config.model(), config.worldSize(), config.workerId(), ChunkHasher.hex(hash),
                layout.dtype().keyName(), Map.of());
    }

    List<Chunk> chunks(int[] tokens, byte[] extra, boolean withPartial, int limitTokens) {
        int n = Math.min(tokens.length, limitTokens);
        ChunkHasher h = new ChunkHasher(config.chunkSize(), extra);
        int count = h.chunks(n, withPartial);
        int[] t = n == tokens.length ? tokens : Arrays.copyOf(tokens, n);
        byte[][] hashes = h.hashes(t, count);
        List<Chunk> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int start = i * config.chunkSize();
            out.add(new Chunk(i, start, Math.min(config.chunkSize(), n - start), key(hashes[i])));
        }
        return out;
    }

    /** Tokens of the chunks from the start whose future says true; with {@code acceptedOnly} a running write counts. */
    static int prefixTokens(List<Chunk> cs, List<CompletableFuture<Boolean>> done, boolean acceptedOnly) {
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
}
