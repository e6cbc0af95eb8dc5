package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.AclSetuserArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.phxfs.core.RegisteredBuffer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A single Redis server that answers but refuses the settings: before, the engine opened, and
 * every store and retrieve was a silent miss (only the error counter moved). Now a wrong or
 * missing password, an unknown ACL user, a database the server lacks and {@code rediss://}
 * against plain TCP each fail the start, naming the setting, with no password in the message or
 * the stack trace; the right ACL user and an existing database work; a server whose memory is
 * full (maxmemory, noeviction) fails stores cleanly and keeps serving what it holds.
 */
class RedisRefusalTest {
    @RegisterExtension
    static final RedisServer REDIS = new RedisServer();

    private static final KvLayout L = KvLayout.preset("tiny-llama");
    private static final int CHUNK = 256;
    private static final String PASSWORD = "s3cret-kv-77";

    /** Runs {@code cmd} on the server (logged in with the password once it has one). */
    private static <T> T admin(String password, java.util.function.Function<RedisCommands<String, String>, T> cmd) {
        RedisURI u = RedisURI.create(password == null ? REDIS.url() : REDIS.url().replace("redis://", "redis://" + password + "@"));
        RedisClient rc = RedisClient.create(u);
        try (StatefulRedisConnection<String, String> c = rc.connect()) {
            return cmd.apply(c.sync());
        } finally {
            rc.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @AfterEach
    void reset() {
        for (String pw : new String[] {PASSWORD, null}) {
            try {
                admin(pw, r -> r.configSet("requirepass", ""));
                admin(null, r -> r.configSet("maxmemory", "0"));
                admin(null, r -> r.flushall());
                return;
            } catch (RuntimeException e) {
                // not this password
            }
        }
    }

    private static KvCacheConfig.Builder config(String url) {
        return KvCacheConfig.builder().localCpu(false).remoteUrl(url).remoteTimeout(Duration.ofMillis(1000)).model("refusal");
    }

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    private static IllegalArgumentException refused(KvCacheConfig.Builder b) {
        long t0 = System.nanoTime();
        var e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(b.build(), L).close());
        System.err.println("RedisRefusalTest: " + e.getMessage() + " (" + (System.nanoTime() - t0) / 1_000_000 + " ms)");
        assertTrue(e.getMessage().startsWith("remote_url 'redis"), e.getMessage());
        assertFalse(stackTrace(e).contains(PASSWORD), "the password in the stack trace");
        return e;
    }

    /** Stores and retrieves one prompt; the tokens retrieved. */
    private static int roundTrip(KvCacheEngine e, long seed) {
        long len = L.bytesPerChunk(2 * CHUNK);
        try (RegisteredBuffer src = TestData.PHX.host().allocate(len);
             RegisteredBuffer dst = TestData.PHX.host().allocate(len)) {
            int[] p = TestData.tokens(2 * CHUNK, seed);
            TestData.fill(src.segment().orElseThrow(), seed);
            assertEquals(2 * CHUNK, e.store(p, new ChunkedKv(src, L, CHUNK)));
            int n = e.retrieve(p, new ChunkedKv(dst, L, CHUNK));
            assertEquals(-1, dst.segment().orElseThrow().mismatch(src.segment().orElseThrow()));
            return n;
        }
    }

    @Test
    void aServerThatRefusesTheLoginFailsTheStartNamingTheSettings() {
        admin(null, r -> r.configSet("requirepass", PASSWORD));
        var e = refused(config(REDIS.url()).remotePassword("not-" + PASSWORD));
        assertTrue(e.getMessage().contains("WRONGPASS") && e.getMessage().contains("remote_password"), e.getMessage());
        e = refused(config(REDIS.url()));
        assertTrue(e.getMessage().contains("NOAUTH"), e.getMessage());
        e = refused(config(REDIS.url().replace("redis://", "redis://nobody:" + PASSWORD + "@")));
        assertTrue(e.getMessage().contains("WRONGPASS") && e.getMessage().contains("redis://nobody:***@"), e.getMessage());
        try (KvCacheEngine ok = new KvCacheEngine(config(REDIS.url()).remotePassword(PASSWORD).build(), L)) {
            assertEquals(2 * CHUNK, roundTrip(ok, 1));
        }
        // an ACL user of its own
        admin(PASSWORD, r -> r.aclSetuser("kvuser", AclSetuserArgs.Builder.on().addPassword(PASSWORD + "-u").allKeys().allCommands()));
        try (KvCacheEngine ok = new KvCacheEngine(config(REDIS.url()).remoteUsername("kvuser").remotePassword(PASSWORD + "-u")
                .build(), L)) {
            assertEquals(2 * CHUNK, roundTrip(ok, 2));
        }
        admin(PASSWORD, r -> r.aclDeluser("kvuser"));
    }

    @Test
    void aDatabaseTheServerLacksFailsTheStartAndOneItHasWorks() {
        var e = refused(config(REDIS.url() + "/99"));
        assertTrue(e.getMessage().contains("no such database") && e.getMessage().contains("DB index"), e.getMessage());
        try (KvCacheEngine ok = new KvCacheEngine(config(REDIS.url() + "/3").build(), L)) {
            assertEquals(2 * CHUNK, roundTrip(ok, 3));
        }
        assertEquals(0L, (long) admin(null, r -> r.dbsize())); // the chunks went to database 3, not 0
    }

    @Test
    void tlsAgainstAPlainServerFailsTheStartClearly() {
        long t0 = System.nanoTime();
        var e = assertThrows(IllegalArgumentException.class,
                () -> new KvCacheEngine(config(REDIS.url().replace("redis://", "rediss://")).build(), L).close());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.err.println("RedisRefusalTest: " + e.getMessage() + " (" + ms + " ms)");
        assertTrue(e.getMessage().startsWith("remote_url 'rediss://127.0.0.1:" + REDIS.port() + "': TLS did not come up"),
                e.getMessage());
        assertTrue(ms < 15_000, ms + " ms");
    }

    @Test
    void aServerAwayAtTheStartIsStillTriedAgainOnUse() throws Exception {
        REDIS.stop();
        boolean back = false;
        try (KvCacheEngine e = new KvCacheEngine(config(REDIS.url()).build(), L)) {
            assertEquals(0, e.lookup(TestData.tokens(2 * CHUNK, 4)));
            REDIS.start();
            back = true;
            long deadline = System.nanoTime() + 20_000_000_000L;
            int n = 0;
            while (n == 0 && System.nanoTime() < deadline) {
                try {
                    n = roundTrip(e, 4);
                } catch (AssertionError notYet) {
                    Thread.sleep(100);
                }
            }
            assertEquals(2 * CHUNK, n);
        } finally {
            if (!back) {
                REDIS.start();
            }
        }
    }

    @Test
    void aFullServerFailsStoresCleanlyAndKeepsServing() {
        try (KvCacheEngine e = new KvCacheEngine(config(REDIS.url()).build(), L)) {
            assertEquals(2 * CHUNK, roundTrip(e, 5));
            admin(null, r -> r.configSet("maxmemory-policy", "noeviction"));
            admin(null, r -> r.configSet("maxmemory", "1"));
            long len = L.bytesPerChunk(2 * CHUNK);
            try (RegisteredBuffer src = TestData.PHX.host().allocate(len);
                 RegisteredBuffer dst = TestData.PHX.host().allocate(len)) {
                int[] p = TestData.tokens(2 * CHUNK, 6);
                assertEquals(0, e.store(p, new ChunkedKv(src, L, CHUNK)), "OOM: nothing stored");
                assertEquals(0, e.retrieve(p, new ChunkedKv(dst, L, CHUNK)));
                int[] held = TestData.tokens(2 * CHUNK, 5);
                assertEquals(2 * CHUNK, e.retrieve(held, new ChunkedKv(dst, L, CHUNK)), "what it holds is served");
            }
            TierStats s = e.metrics().tier("redis");
            assertTrue(s.failedPuts() >= 2 && s.errors() >= 2, s.toString());
        }
    }
}
