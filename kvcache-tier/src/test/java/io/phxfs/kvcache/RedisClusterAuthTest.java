package io.phxfs.kvcache;

import static io.phxfs.kvcache.ClusterChunks.CHUNK;
import static io.phxfs.kvcache.ClusterChunks.L;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cluster tier against servers that require a password: the default user's
 * ({@code requirepass}), an ACL user limited to the commands the tier and Lettuce send, given
 * in the settings or in the URL (percent-encoded), and replicas that log in to their masters as
 * an ACL user of their own ({@code masteruser}/{@code masterauth}), checked by reading from
 * them. A wrong or missing password fails the start with a message that names the URL and
 * holds no password.
 */
class RedisClusterAuthTest {
    @RegisterExtension
    static final RedisCluster CLUSTER = new RedisCluster(RedisCluster.Security.ACL);

    private final String model = "auth-" + System.nanoTime();

    /** Stores a prompt through one engine and reads it back through another, byte-exact. */
    private static void roundTrip(KvCacheConfig.Builder writerConfig, KvCacheConfig.Builder readerConfig, long seed)
            throws Exception {
        int tokens = 9 * CHUNK;
        int[] p = TestData.tokens(tokens, seed);
        try (KvCacheEngine w = new KvCacheEngine(writerConfig.build(), L);
             KvCacheEngine r = new KvCacheEngine(readerConfig.build(), L);
             RegisteredBuffer src = TestData.PHX.host().allocate(L.bytesPerChunk(tokens));
             RegisteredBuffer dst = TestData.PHX.host().allocate(L.bytesPerChunk(tokens))) {
            ClusterChunks.fill(src, p);
            assertEquals(tokens, w.store(p, new ChunkedKv(src, L, CHUNK)));
            // a reader of replicas waits for the asynchronous replication; any prefix it gets is exact
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int n;
            do {
                n = r.retrieve(p, new ChunkedKv(dst, L, CHUNK));
                assertEquals(-1, ClusterChunks.mismatch(dst, p, n));
            } while (n < tokens && System.nanoTime() < deadline && sleep());
            assertEquals(tokens, n, r.metrics().tier("redis").toString());
            assertEquals(0, w.metrics().tier("redis").errors(), w.metrics().tier("redis").toString());
            for (KvCacheEngine e : new KvCacheEngine[] {w, r}) {
                String shown = e.config() + " " + e + " " + e.tiers() + " " + e.metrics();
                assertFalse(shown.contains(RedisCluster.PASSWORD) || shown.contains(RedisCluster.ADMIN_PASSWORD), shown);
            }
        }
    }

    private static boolean sleep() throws InterruptedException {
        Thread.sleep(50);
        return true;
    }

    private KvCacheConfig.Builder config(String url) {
        return KvCacheConfig.builder().localCpu(false).remoteUrl(url).model(model);
    }

    @Test
    void anAclUserFromTheSettingsAndReadsFromReplicasThatLoggedInToTheirMasters() throws Exception {
        roundTrip(config(CLUSTER.url()).remoteUsername(RedisCluster.USER).remotePassword(RedisCluster.PASSWORD),
                config(CLUSTER.url()).remoteUsername(RedisCluster.USER).remotePassword(RedisCluster.PASSWORD)
                        .remoteReadFrom("replica"), 1);
        long replicated = 0;
        for (RedisCluster.Node m : CLUSTER.masters()) {
            replicated += CLUSTER.calls(CLUSTER.replicaOf(m), "get");
        }
        assertTrue(replicated >= 9, "the replicas served the reads: " + replicated);
    }

    @Test
    void theUserAndPasswordInTheUrlPercentEncoded() throws Exception {
        // '@', ':' and '/' may stand as they are (the last '@' ends the user-info); '%' is escaped
        String url = CLUSTER.url().replace("redis-cluster://", "redis-cluster://" + RedisCluster.USER + ":"
                + RedisCluster.PASSWORD.replace("%", "%25") + "@");
        roundTrip(config(url), config(url), 2);
    }

    @Test
    void theDefaultUsersPasswordAlone() throws Exception {
        roundTrip(config(CLUSTER.url()).remotePassword(RedisCluster.ADMIN_PASSWORD),
                config(CLUSTER.url()).remotePassword(RedisCluster.ADMIN_PASSWORD), 3);
    }

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    @Test
    void aWrongOrMissingPasswordFailsTheStartClearlyAndShowsNoPassword() {
        String wrong = "not-the-password-77";
        var e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(config(CLUSTER.url())
                .remoteUsername(RedisCluster.USER).remotePassword(wrong).remoteTimeout(Duration.ofMillis(1000)).build(), L));
        System.err.println("RedisClusterAuthTest: wrong password -> " + e.getMessage());
        assertTrue(e.getMessage().startsWith("remote_url '" + CLUSTER.url() + "': no node of the cluster answered"),
                e.getMessage());
        assertTrue(e.getMessage().contains("WRONGPASS"), e.getMessage());
        assertFalse(stackTrace(e).contains(wrong), "the password in the stack trace");

        String inUrl = CLUSTER.url().replace("redis-cluster://", "redis-cluster://" + RedisCluster.USER + ":" + wrong + "@");
        e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(config(inUrl)
                .remoteTimeout(Duration.ofMillis(1000)).build(), L));
        assertTrue(e.getMessage().contains("redis-cluster://" + RedisCluster.USER + ":***@127.0.0.1:"), e.getMessage());
        assertFalse(stackTrace(e).contains(wrong), "the password in the stack trace");

        e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(config(CLUSTER.url())
                .remoteTimeout(Duration.ofMillis(1000)).build(), L));
        System.err.println("RedisClusterAuthTest: no password -> " + e.getMessage());
        assertTrue(e.getMessage().contains("NOAUTH"), e.getMessage());
    }
}
