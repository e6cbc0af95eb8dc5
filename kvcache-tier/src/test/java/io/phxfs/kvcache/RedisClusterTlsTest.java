package io.phxfs.kvcache;

import static io.phxfs.kvcache.ClusterChunks.CHUNK;
import static io.phxfs.kvcache.ClusterChunks.L;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cluster tier over TLS ({@code rediss-cluster://}) against servers that speak nothing else:
 * clients, the cluster bus and replication on TLS, client certificates required, all made by
 * openssl for the test. A store and a read from replicas come back byte-exact; a client without
 * its certificate, one trusting another CA, and one speaking plain TCP fail the start with a
 * message naming the URL.
 */
class RedisClusterTlsTest {
    @RegisterExtension
    static final RedisCluster CLUSTER = new RedisCluster(RedisCluster.Security.TLS);

    private final String model = "tls-" + System.nanoTime();

    private KvCacheConfig.Builder tls() {
        return KvCacheConfig.builder().localCpu(false).remoteUrl(CLUSTER.url()).model(model)
                .remoteTlsCaFile(CLUSTER.file("ca.crt")).remoteTlsCertFile(CLUSTER.file("client.crt"))
                .remoteTlsKeyFile(CLUSTER.file("client.key"));
    }

    @Test
    void storesAndReadsFromReplicasOverTls() throws Exception {
        assertTrue(CLUSTER.url().startsWith("rediss-cluster://"));
        int tokens = 9 * CHUNK;
        int[] p = TestData.tokens(tokens, 7);
        try (KvCacheEngine w = new KvCacheEngine(tls().build(), L);
             KvCacheEngine r = new KvCacheEngine(tls().remoteReadFrom("replica").build(), L);
             RegisteredBuffer src = TestData.PHX.host().allocate(L.bytesPerChunk(tokens));
             RegisteredBuffer dst = TestData.PHX.host().allocate(L.bytesPerChunk(tokens))) {
            ClusterChunks.fill(src, p);
            assertEquals(tokens, w.store(p, new ChunkedKv(src, L, CHUNK)));
            assertEquals(tokens, w.lookup(p));
            assertEquals(tokens, w.retrieve(p, new ChunkedKv(dst, L, CHUNK)));
            assertEquals(-1, ClusterChunks.mismatch(dst, p, tokens));
            // the replicas got the chunks over TLS replication
            dst.segment().orElseThrow().fill((byte) 0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int n;
            do {
                n = r.retrieve(p, new ChunkedKv(dst, L, CHUNK));
                assertEquals(-1, ClusterChunks.mismatch(dst, p, n));
            } while (n < tokens && System.nanoTime() < deadline && sleep());
            assertEquals(tokens, n, r.metrics().tier("redis").toString());
            assertTrue(r.tiers().getFirst().toString().startsWith("RedisTier[rediss-cluster://127.0.0.1:"),
                    r.tiers().getFirst().toString());
        }
    }

    private static boolean sleep() throws InterruptedException {
        Thread.sleep(50);
        return true;
    }

    private static String failsToStart(KvCacheConfig c) {
        var e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(c, L));
        assertTrue(e.getMessage().contains("': no node of the cluster answered (tried 127.0.0.1:"), e.getMessage());
        return e.getMessage();
    }

    @Test
    void withoutItsCertificateOrTrustingAnotherCaOrInPlainTcpTheStartFailsClearly() {
        Duration t = Duration.ofMillis(1500);
        String noCert = failsToStart(KvCacheConfig.builder().localCpu(false).remoteUrl(CLUSTER.url()).model(model)
                .remoteTlsCaFile(CLUSTER.file("ca.crt")).remoteTimeout(t).build());
        System.err.println("RedisClusterTlsTest: no client certificate -> " + noCert);
        String otherCa = failsToStart(tls().remoteTlsCaFile(CLUSTER.file("other-ca.crt")).remoteTimeout(t).build());
        System.err.println("RedisClusterTlsTest: another CA -> " + otherCa);
        assertTrue(otherCa.contains("certificat") || otherCa.contains("PKIX"), otherCa);
        String plain = failsToStart(KvCacheConfig.builder().localCpu(false).model(model).remoteTimeout(t)
                .remoteUrl(CLUSTER.url().replace("rediss-cluster://", "redis-cluster://")).build());
        System.err.println("RedisClusterTlsTest: plain TCP -> " + plain);
    }
}
