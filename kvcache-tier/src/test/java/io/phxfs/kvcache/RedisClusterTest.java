package io.phxfs.kvcache;

import static io.phxfs.kvcache.ClusterChunks.CHUNK;
import static io.phxfs.kvcache.ClusterChunks.L;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.cluster.SlotHash;
import io.phxfs.core.RegisteredBuffer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Redis tier on a real Redis Cluster (3 masters, 3 replicas, Debian's redis-server):
 * chunks spread over the shards as one key each, a store's SETs pipelined across the shards, a
 * shard away, reads from replicas, two JVMs sharing the cluster, and, last, a master killed with
 * SIGKILL in the middle of a run of stores and retrieves. Every byte retrieved is compared with
 * what was stored.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisClusterTest {
    @RegisterExtension
    static final RedisCluster CLUSTER = new RedisCluster(RedisCluster.Security.NONE);

    /** The cluster outlives each test: keys of a model name of its own start every test empty. */
    private final String model = "cluster-" + System.nanoTime();

    private KvCacheConfig.Builder config() {
        return KvCacheConfig.builder().localCpu(false).remoteUrl(CLUSTER.url()).model(model);
    }

    private static long sum(List<RedisCluster.Node> nodes, String command) throws Exception {
        long n = 0;
        for (RedisCluster.Node node : nodes) {
            n += CLUSTER.calls(node, command);
        }
        return n;
    }

    @Test
    @Order(1)
    void eachChunkIsOneKeyOnItsShardAndComesBackByteExact() throws Exception {
        int chunks = 24;
        int[] p = TestData.tokens(chunks * CHUNK, 1);
        List<RedisCluster.Node> masters = CLUSTER.masters();
        long setsBefore = sum(masters, "set");
        try (KvCacheEngine e = new KvCacheEngine(config().build(), L);
             RegisteredBuffer src = TestData.PHX.host().allocate(L.bytesPerChunk(chunks * CHUNK));
             RegisteredBuffer dst = TestData.PHX.host().allocate(L.bytesPerChunk(chunks * CHUNK))) {
            assertTrue(e.toString().contains("redis"), e.toString());
            ClusterChunks.fill(src, p);
            assertEquals(0, e.lookup(p));
            assertEquals(chunks * CHUNK, e.store(p, new ChunkedKv(src, L, CHUNK)));
            assertEquals(chunks * CHUNK, e.lookup(p));
            assertEquals(chunks * CHUNK, e.retrieve(p, new ChunkedKv(dst, L, CHUNK)));
            assertEquals(-1, ClusterChunks.mismatch(dst, p, chunks * CHUNK));
            // one SET per chunk (header and payload together), no other key
            assertEquals(chunks, sum(masters, "set") - setsBefore);
            Set<Integer> shards = new TreeSet<>();
            byte[][] hashes = new ChunkHasher(CHUNK, null).hashes(p, chunks);
            for (byte[] h : hashes) {
                String key = e.key(h).toString();
                RedisCluster.Node m = CLUSTER.masterOf(key);
                shards.add(m.port);
                assertEquals(String.valueOf(ChunkFileHeader.SIZE + L.bytesPerChunk(CHUNK)),
                        CLUSTER.cli(m, "strlen", key).trim(), "the value of " + key + " is header + payload");
            }
            assertEquals(3, shards.size(), "24 chunks land on all 3 shards: " + shards);
            // a prompt sharing the first 10 chunks
            int[] q = p.clone();
            q[10 * CHUNK + 3] ^= 1;
            assertEquals(10 * CHUNK, e.lookup(q));
            TierStats s = e.metrics().tier("redis");
            assertEquals(0, s.errors(), s.toString());
            assertEquals(chunks, s.puts());
        }
    }

    /** Keys of {@code n} chunks whose slots the given master serves (or, with {@code on} false, does not). */
    private static List<CacheKey> keysOn(RedisCluster.Node master, boolean on, int n, String model, long seed)
            throws Exception {
        List<CacheKey> out = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(seed);
        while (out.size() < n) {
            byte[] h = new byte[32];
            r.nextBytes(h);
            CacheKey k = new CacheKey(model, 1, 0, HexFormat.of().formatHex(h), "bfloat16", Map.of());
            if ((CLUSTER.masterOfSlot(SlotHash.getSlot(k.toString())).port == master.port) == on) {
                out.add(k);
            }
        }
        return out;
    }

    @Test
    @Order(2)
    void storeIsPipelinedAcrossShardsAndAShardAwayCostsOnlyItsChunks() throws Exception {
        Duration timeout = Duration.ofMillis(300);
        RedisCluster.Node away = CLUSTER.masters().getFirst();
        RedisCluster.Node itsReplica = CLUSTER.replicaOf(away);
        // 8 chunks on the shard that will not answer, first, then 8 on the others
        List<CacheKey> keys = new ArrayList<>(keysOn(away, true, 8, model, 2));
        keys.addAll(keysOn(away, false, 8, model, 3));
        long per = L.bytesPerChunk(CHUNK);
        try (RedisTier t = new RedisTier(config().remoteTimeout(timeout).build());
             RegisteredBuffer src = TestData.PHX.host().allocate(per * keys.size());
             RegisteredBuffer dst = TestData.PHX.host().allocate(per * keys.size())) {
            List<KvTier.Put> puts = new ArrayList<>();
            List<KvTier.Get> gets = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                MemorySegment s = src.segment().orElseThrow().asSlice(i * per, per);
                TestData.fill(s, 1000 + i);
                puts.add(new KvTier.Put(keys.get(i), CHUNK, s));
                gets.add(new KvTier.Get(keys.get(i), dst.segment().orElseThrow().asSlice(i * per, per)));
            }
            // the master and its replica both stopped: no failover meanwhile, the shard is just away
            CLUSTER.pause(itsReplica);
            CLUSTER.pause(away);
            boolean[] stored;
            boolean[] got;
            long storeNanos;
            long getNanos;
            try {
                long t0 = System.nanoTime();
                stored = t.putAll(L, puts);
                storeNanos = System.nanoTime() - t0;
                t0 = System.nanoTime();
                got = t.getAll(gets);
                getNanos = System.nanoTime() - t0;
            } finally {
                CLUSTER.resume(away);
                CLUSTER.resume(itsReplica);
            }
            System.err.printf("RedisClusterTest: with a shard away, 16 SETs took %.0f ms, 16 GETs %.0f ms (timeout %d ms)%n",
                    storeNanos / 1e6, getNanos / 1e6, timeout.toMillis());
            for (int i = 0; i < 16; i++) {
                assertEquals(i >= 8, stored[i], "chunk " + i + (i >= 8 ? " on a live shard" : " on the shard away"));
                assertEquals(i >= 8, got[i], "chunk " + i);
            }
            // one round trip per chunk would have waited for each of the 8 lost SETs in turn (8 x 300 ms)
            assertTrue(storeNanos < 4 * timeout.toNanos(), "the SETs were not in flight together: " + storeNanos / 1e6 + " ms");
            assertTrue(getNanos < 4 * timeout.toNanos(), "the GETs were not in flight together: " + getNanos / 1e6 + " ms");
            for (int i = 8; i < 16; i++) {
                assertEquals(-1, gets.get(i).dst().mismatch(puts.get(i).payload()), "chunk " + i);
            }
            TierStats s = t.stats();
            assertTrue(s.errors() >= 16 && s.failedPuts() == 8, s.toString());

            // back: every chunk stores and reads again, byte-exact (a lost SET the server took late
            // anyway holds the right bytes too: the payload was copied out before the call returned)
            CLUSTER.awaitHealthy(20_000);
            boolean[] again = new boolean[16];
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            do {
                again = t.putAll(L, puts);
            } while (!allTrue(again) && System.nanoTime() < deadline && sleep(100));
            assertTrue(allTrue(again), "stores resume once the shard is back");
            dst.segment().orElseThrow().fill((byte) 0);
            assertTrue(allTrue(t.getAll(gets)));
            assertEquals(-1, dst.segment().orElseThrow().mismatch(src.segment().orElseThrow()));
        }
    }

    private static boolean allTrue(boolean[] b) {
        for (boolean x : b) {
            if (!x) {
                return false;
            }
        }
        return true;
    }

    private static boolean sleep(long ms) throws InterruptedException {
        Thread.sleep(ms);
        return true;
    }

    @Test
    @Order(3)
    void readsGoToReplicasWhenAsked() throws Exception {
        int chunks = 12;
        int[] p = TestData.tokens(chunks * CHUNK, 4);
        List<RedisCluster.Node> masters = CLUSTER.masters();
        List<RedisCluster.Node> replicas = new ArrayList<>();
        for (RedisCluster.Node m : masters) {
            replicas.add(CLUSTER.replicaOf(m));
        }
        try (KvCacheEngine writer = new KvCacheEngine(config().build(), L);
             KvCacheEngine reader = new KvCacheEngine(config().remoteReadFrom("replica_preferred").build(), L);
             RegisteredBuffer src = TestData.PHX.host().allocate(L.bytesPerChunk(chunks * CHUNK));
             RegisteredBuffer dst = TestData.PHX.host().allocate(L.bytesPerChunk(chunks * CHUNK))) {
            assertTrue(reader.tiers().getFirst().toString().contains("read from replica_preferred"),
                    reader.tiers().getFirst().toString());
            ClusterChunks.fill(src, p);
            assertEquals(chunks * CHUNK, writer.store(p, new ChunkedKv(src, L, CHUNK)));
            long masterGets = sum(masters, "get");
            long replicaGets = sum(replicas, "get");
            // replication is asynchronous: until a replica has a chunk, it is a miss, never wrong bytes
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int n;
            do {
                n = reader.retrieve(p, new ChunkedKv(dst, L, CHUNK));
                assertEquals(-1, ClusterChunks.mismatch(dst, p, n));
            } while (n < chunks * CHUNK && System.nanoTime() < deadline && sleep(50));
            assertEquals(chunks * CHUNK, n);
            assertEquals(masterGets, sum(masters, "get"), "a read went to a master");
            assertTrue(sum(replicas, "get") - replicaGets >= chunks, "the replicas served the GETs");
        }
    }

    @Test
    @Order(4)
    void twoJvmsShareTheCluster() throws Exception {
        int tokens = 8 * CHUNK;
        long parentSeed = 51;
        long childSeed = 52;
        int[] parents = TestData.tokens(tokens, parentSeed);
        int[] childs = TestData.tokens(tokens, childSeed);
        try (KvCacheEngine e = new KvCacheEngine(config().build(), L);
             RegisteredBuffer buf = TestData.PHX.host().allocate(L.bytesPerChunk(tokens))) {
            ChunkedKv kv = new ChunkedKv(buf, L, CHUNK);
            ClusterChunks.fill(buf, parents);
            assertEquals(tokens, e.store(parents, kv));
            assertEquals(0, e.lookup(childs));

            String java = ProcessHandle.current().info().command().orElse("java");
            Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
                    System.getProperty("java.class.path"), ClusterChild.class.getName(), CLUSTER.url(), model,
                    String.valueOf(childSeed), String.valueOf(parentSeed), String.valueOf(tokens))
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            List<String> lines = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) {
                    lines.add(line);
                }
            }
            assertTrue(child.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, child.exitValue(), lines.toString());
            assertEquals(List.of("stored " + tokens, "retrieved " + tokens + " mismatch -1"), lines,
                    "the child stores its prompt and hits the parent's, byte-exact");

            // and the parent hits the child's
            buf.segment().orElseThrow().fill((byte) 0);
            assertEquals(tokens, e.lookup(childs));
            assertEquals(tokens, e.retrieve(childs, kv));
            assertEquals(-1, ClusterChunks.mismatch(buf, childs, tokens));
        }
    }

    /**
     * A writer (memory tier on: write-behind, a queue of 4 chunks) stores prompt after prompt and
     * a reader (Redis only) retrieves each one, while a master is killed with SIGKILL. Throughout:
     * no exception, every byte the reader gets is the byte stored, the queue never exceeds its
     * bound and no store waits long; the dead shard's chunks are misses until its replica is
     * promoted; after that every prompt comes back whole again.
     */
    @Test
    @Order(5)
    void aMasterKilledMidRunCostsMissesNeverAnExceptionOrAWrongByte() throws Exception {
        int chunks = 6;
        int tokens = chunks * CHUNK;
        Duration timeout = Duration.ofMillis(500);
        KvCacheConfig wc = config().localCpu(true).maxLocalCpuBytes(16 * L.bytesPerChunk(CHUNK)).writeQueueChunks(4)
                .ioThreads(2).remoteTimeout(timeout).build();
        KvCacheConfig rc = config().remoteTimeout(timeout).build();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong killedAt = new AtomicLong(Long.MAX_VALUE);
        AtomicLong promotedAt = new AtomicLong(Long.MAX_VALUE);
        AtomicInteger rounds = new AtomicInteger();
        AtomicInteger partial = new AtomicInteger();
        AtomicLong wholeAfterPromotion = new AtomicLong();
        AtomicLong maxStoreNanos = new AtomicLong();
        AtomicInteger maxQueue = new AtomicInteger();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        List<int[]> before = new ArrayList<>();
        try (KvCacheEngine writer = new KvCacheEngine(wc, L);
             KvCacheEngine reader = new KvCacheEngine(rc, L)) {
            Thread run = Thread.ofPlatform().name("cluster-run").start(() -> {
                try (RegisteredBuffer src = TestData.PHX.host().allocate(L.bytesPerChunk(tokens));
                     RegisteredBuffer dst = TestData.PHX.host().allocate(L.bytesPerChunk(tokens))) {
                    for (int r = 0; !stop.get(); r++) {
                        int[] p = TestData.tokens(tokens, 10_000 + r);
                        ClusterChunks.fill(src, p);
                        long t0 = System.nanoTime();
                        writer.store(p, new ChunkedKv(src, L, CHUNK));
                        maxStoreNanos.accumulateAndGet(System.nanoTime() - t0, Math::max);
                        maxQueue.accumulateAndGet(writer.metrics().queueDepth(), Math::max);
                        writer.flush();
                        if (System.nanoTime() < killedAt.get()) {
                            synchronized (before) {
                                before.add(p);
                            }
                        }
                        dst.segment().orElseThrow().fill((byte) 0);
                        int looked = reader.lookup(p);
                        int got = reader.retrieve(p, new ChunkedKv(dst, L, CHUNK));
                        long bad = ClusterChunks.mismatch(dst, p, got);
                        if (bad >= 0) {
                            throw new AssertionError("round " + r + ": wrong byte at " + bad + " of " + got + " tokens");
                        }
                        if (got < tokens || looked < tokens) {
                            partial.incrementAndGet();
                        } else if (System.nanoTime() > promotedAt.get()) {
                            wholeAfterPromotion.incrementAndGet();
                        }
                        rounds.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            });
            Thread.sleep(1500);
            RedisCluster.Node victim = CLUSTER.masters().getFirst();
            RedisCluster.Node heir = CLUSTER.replicaOf(victim);
            int roundsBefore = rounds.get();
            killedAt.set(System.nanoTime());
            CLUSTER.kill(victim);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!CLUSTER.cli(heir, "role").startsWith("master") && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            promotedAt.set(System.nanoTime());
            double promotion = (promotedAt.get() - killedAt.get()) / 1e9;
            // stores and retrieves come back whole within seconds of the promotion
            while (wholeAfterPromotion.get() < 5 && System.nanoTime() < deadline && failures.isEmpty()) {
                Thread.sleep(50);
            }
            stop.set(true);
            run.join(30_000);
            double back = (System.nanoTime() - promotedAt.get()) / 1e9;
            TierStats rs = reader.metrics().tier("redis");
            TierStats ws = writer.metrics().tier("redis");
            System.err.printf("RedisClusterTest: killed master %d; replica %d promoted after %.1f s; %d rounds (%d before the"
                            + " kill), %d partial, whole again %.1f s after the promotion; longest store %.0f ms, deepest"
                            + " queue %d of %d; reader %s; writer %s%n", victim.port, heir.port, promotion, rounds.get(),
                    roundsBefore, partial.get(), back, maxStoreNanos.get() / 1e6, maxQueue.get(), wc.writeQueueChunks(),
                    rs, ws);
            if (!failures.isEmpty()) {
                throw new AssertionError("the run failed", failures.peek());
            }
            assertFalse(run.isAlive());
            assertTrue(roundsBefore >= 3, "too few rounds before the kill: " + roundsBefore);
            assertTrue(partial.get() > 0, "no round lost a chunk: the kill did not land in the run");
            assertTrue(wholeAfterPromotion.get() >= 5, "prompts did not come back whole after the promotion");
            assertTrue(maxQueue.get() <= wc.writeQueueChunks(), "queue " + maxQueue.get());
            assertTrue(maxStoreNanos.get() < TimeUnit.SECONDS.toNanos(5), "a store waited " + maxStoreNanos.get() / 1e6 + " ms");
            assertTrue(rs.errors() > 0 && ws.failedPuts() > 0, "the dead shard was never met: " + rs + " " + ws);

            // what was stored before the kill: whatever comes back is byte-exact (the replica had it,
            // unless the kill beat the asynchronous replication: then a miss)
            int whole = 0;
            try (RegisteredBuffer dst = TestData.PHX.host().allocate(L.bytesPerChunk(tokens))) {
                for (int[] p : before) {
                    dst.segment().orElseThrow().fill((byte) 0);
                    int got = reader.retrieve(p, new ChunkedKv(dst, L, CHUNK));
                    assertEquals(-1, ClusterChunks.mismatch(dst, p, got));
                    whole += got == tokens ? 1 : 0;
                }
            }
            System.err.printf("RedisClusterTest: %d of %d prompts stored before the kill come back whole%n", whole,
                    before.size());
            assertTrue(whole > 0, "nothing stored before the kill survived the failover");
        }
    }
}
