package io.phxfs.kvcache;

import io.phxfs.core.RegisteredBuffer;

/**
 * The second JVM of {@link RedisClusterTest}'s sharing test: on the same cluster, stores one
 * prompt and retrieves another that the parent stored, checking every byte; prints
 * "stored N" and "retrieved N mismatch M" (M = -1: all bytes right).
 */
public final class ClusterChild {
    private ClusterChild() {
    }

    /**
     * Runs once.
     *
     * @param args the cluster URL, the model name, the seed of the prompt to store, the seed of the prompt to retrieve, tokens per prompt
     */
    public static void main(String[] args) {
        KvCacheConfig c = KvCacheConfig.builder().localCpu(false).remoteUrl(args[0]).model(args[1]).build();
        int n = Integer.parseInt(args[4]);
        int[] mine = TestData.tokens(n, Long.parseLong(args[2]));
        int[] theirs = TestData.tokens(n, Long.parseLong(args[3]));
        try (KvCacheEngine e = new KvCacheEngine(c, ClusterChunks.L);
             RegisteredBuffer buf = TestData.PHX.host().allocate(ClusterChunks.L.bytesPerChunk(n))) {
            ChunkedKv kv = new ChunkedKv(buf, ClusterChunks.L, ClusterChunks.CHUNK);
            ClusterChunks.fill(buf, mine);
            System.out.println("stored " + e.store(mine, kv));
            buf.segment().orElseThrow().fill((byte) 0);
            int looked = e.lookup(theirs);
            int got = e.retrieve(theirs, kv);
            System.out.println("retrieved " + Math.min(looked, got) + " mismatch " + ClusterChunks.mismatch(buf, theirs, got));
            System.out.flush();
        }
    }
}
