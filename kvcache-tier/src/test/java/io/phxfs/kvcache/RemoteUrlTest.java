package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisURI;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code remote_url} and the other remote settings: the four URL forms, and for every malformed
 * one a message naming the setting, the URL and what is wrong, with the password masked, in
 * messages, exceptions and every toString.
 */
class RemoteUrlTest {
    private static final String SECRET = "hunter2-secret";

    @TempDir
    Path tmp;

    @Test
    void theFourForms() {
        RemoteUrl one = RemoteUrl.parse("redis://cache:6380/2", "remote_url");
        assertFalse(one.isCluster());
        assertFalse(one.tls());
        assertEquals(List.of(new RemoteUrl.HostPort("cache", 6380)), one.hosts());
        assertEquals(2, one.database());

        RemoteUrl c = RemoteUrl.parse("redis-cluster://h1:7000,h2:7001,10.0.0.3:7002", "remote_url");
        assertTrue(c.isCluster());
        assertFalse(c.tls());
        assertEquals(List.of(new RemoteUrl.HostPort("h1", 7000), new RemoteUrl.HostPort("h2", 7001),
                new RemoteUrl.HostPort("10.0.0.3", 7002)), c.hosts());

        RemoteUrl s = RemoteUrl.parse("rediss-cluster://kv:" + SECRET + "@h1:7000,[::1]:7001,h3", "remote_url");
        assertTrue(s.isCluster() && s.tls());
        assertEquals("kv", s.username());
        assertEquals(new RemoteUrl.HostPort("::1", 7001), s.hosts().get(1));
        assertEquals(6379, s.hosts().get(2).port(), "the default port");
        assertEquals("rediss-cluster://kv:***@h1:7000,[::1]:7001,h3", s.toString());

        RemoteUrl t = RemoteUrl.parse("rediss://:" + SECRET + "@cache", "remote_url");
        assertTrue(t.tls() && !t.isCluster());
        assertNull(t.username());
        List<RedisURI> u = t.redisUris(null, null, Duration.ofSeconds(1));
        assertTrue(u.getFirst().isSsl());
        assertEquals(SECRET, new String(u.getFirst().getCredentialsProvider().resolveCredentials().block().getPassword()));
        assertFalse(u.getFirst().toString().contains(SECRET), u.getFirst().toString());
    }

    @Test
    void userInfoIsPercentDecodedAndSettingsWin() {
        // the test cluster's password: '@', ':', '/' as they are, '%' escaped
        RemoteUrl u = RemoteUrl.parse("redis-cluster://kv%74ier:s3cr:t@w/rd%25x@127.0.0.1:7000", "remote_url");
        assertEquals("kvtier", u.username());
        assertEquals("s3cr:t@w/rd%x", u.password());
        assertEquals("redis-cluster://kv%74ier:***@127.0.0.1:7000", u.toString());
        var creds = u.redisUris(null, null, Duration.ofSeconds(1)).getFirst().getCredentialsProvider()
                .resolveCredentials().block();
        assertEquals("kvtier", creds.getUsername());
        assertEquals("s3cr:t@w/rd%x", new String(creds.getPassword()));
        // remote_username and remote_password, when set, go before the URL's
        creds = u.redisUris("other", "pw2", Duration.ofSeconds(1)).getFirst().getCredentialsProvider()
                .resolveCredentials().block();
        assertEquals("other", creds.getUsername());
        assertEquals("pw2", new String(creds.getPassword()));
        // a user-info without a colon is a password, as Lettuce reads it
        assertEquals(SECRET, RemoteUrl.parse("redis://" + SECRET + "@h:1", "remote_url").password());
        assertEquals("redis://***@h:1", RemoteUrl.redact("redis://" + SECRET + "@h:1"));
    }

    private static String badUrl(String url) {
        var e = assertThrows(IllegalArgumentException.class,
                () -> KvCacheConfig.builder().remoteUrl(url).build());
        String m = e.getMessage();
        assertTrue(m.startsWith("remote_url '"), m);
        assertFalse(m.contains(SECRET), "the password in the message: " + m);
        assertFalse(stackTrace(e).contains(SECRET), "the password in the stack trace");
        return m;
    }

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    @Test
    void malformedUrlsNameTheSettingTheUrlAndTheFault() {
        assertTrue(badUrl("redis-cluster://h1:70000,h2:7001").contains("port 70000 of 'h1:70000' is out of range 1..65535"));
        assertTrue(badUrl("redis-cluster://h1:0").contains("port 0"));
        assertTrue(badUrl("redis-cluster://h1:7000,,h2:7001").contains("an empty host in the list"));
        assertTrue(badUrl("redis-cluster://h1:70x0").contains("port '70x0' of 'h1:70x0' is not a number"));
        assertTrue(badUrl("redis-cluster://").contains("no host"));
        assertTrue(badUrl("redis-cluster://::1:7000").contains("an IPv6 address goes in brackets"));
        assertTrue(badUrl("redis-cluster://[::1:7000").contains("no ']'"));
        assertTrue(badUrl("redis-cluster://h1:7000/3").contains("a cluster has only database 0"));
        assertTrue(badUrl("redis://h1:6379,h2:6379").contains("a list of hosts is a cluster, redis-cluster://"));
        assertTrue(badUrl("redis://h1:6379?timeout=5s").contains("query parameters are not supported"));
        assertTrue(badUrl("redis-sentinel://h1:26379").contains("scheme 'redis-sentinel' is none of"));
        assertTrue(badUrl("cache-host:6379").contains("no scheme"));
        assertTrue(badUrl("redis://h_1:6379/x").contains("database 'x' is not a number"));
        assertTrue(badUrl("redis://h 1:6379").contains("host 'h 1' holds ' '"));
        String m = badUrl("redis-cluster://kv:" + SECRET + "@h1:99999");
        assertTrue(m.contains("redis-cluster://kv:***@h1:99999"), m);
        m = badUrl("redis-cluster://kv:" + SECRET + "%zz@h1:7000");
        assertTrue(m.contains("not followed by two hex digits"), m);
    }

    @Test
    void theOtherRemoteSettingsAreCheckedTogether(@TempDir Path dir) throws Exception {
        var e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.builder()
                .remoteUrl("redis-cluster://h:1").remoteReadFrom("slaves").build());
        assertTrue(e.getMessage().startsWith("remote_read_from: 'slaves' is none of master, master_preferred, replica,"
                + " replica_preferred"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.builder()
                .remoteUrl("redis://h:1").remoteReadFrom("replica").build());
        assertTrue(e.getMessage().contains("needs replicas to read from, a redis-cluster:// remote_url"), e.getMessage());
        assertEquals("replica_preferred", KvCacheConfig.builder().remoteUrl("redis-cluster://h:1")
                .remoteReadFrom("REPLICA_PREFERRED").build().remoteReadFrom());
        Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
        e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.builder()
                .remoteUrl("redis-cluster://h:1").remoteTlsCaFile(ca).build());
        assertTrue(e.getMessage().contains("is not rediss:// or rediss-cluster://"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.builder()
                .remoteUrl("rediss-cluster://h:1").remoteTlsCaFile(dir.resolve("missing.pem")).build());
        assertEquals("remote_tls_ca_file: " + dir.resolve("missing.pem") + " does not exist", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.builder()
                .remoteUrl("rediss-cluster://h:1").remoteTlsCertFile(ca).build());
        assertTrue(e.getMessage().contains("remote_tls_cert_file and remote_tls_key_file go together"), e.getMessage());

        // from a file, the file named too
        Path y = Files.writeString(tmp.resolve("kv.yaml"), """
                remote_url: "rediss-cluster://kv:%s@h1:7000,h2:7001"
                remote_read_from: replica_preferred
                remote_tls_ca_file: "%s"
                remote_password: "%s"
                """.formatted(SECRET, ca, SECRET));
        KvCacheConfig c = KvCacheConfig.load(y);
        assertEquals("replica_preferred", c.remoteReadFrom());
        assertEquals(ca, c.remoteTlsCaFile());
        assertEquals(SECRET, c.remotePassword());
        assertFalse(c.toString().contains(SECRET), c.toString());
        assertTrue(c.toString().contains("remotePassword=***") && c.toString().contains("kv:***@h1:7000"), c.toString());
        Path bad = Files.writeString(tmp.resolve("bad.yaml"), "remote_url: \"redis-cluster://kv:" + SECRET + "@h1:70000\"\n");
        e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(bad));
        assertTrue(e.getMessage().startsWith(bad + ": remote_url 'redis-cluster://kv:***@h1:70000': port 70000"), e.getMessage());
    }

    @Test
    void anUnreachableClusterAtTheStartIsAClearErrorWithoutThePassword() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        String url = "redis-cluster://kv:" + SECRET + "@127.0.0.1:" + port;
        KvCacheConfig c = KvCacheConfig.builder().localCpu(false).remoteUrl(url).remotePassword(SECRET)
                .remoteTimeout(Duration.ofMillis(500)).build();
        long t0 = System.nanoTime();
        var e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(c, KvLayout.preset("tiny-llama")));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        String m = e.getMessage();
        System.err.println("RemoteUrlTest: unreachable cluster -> " + m + " (" + ms + " ms)");
        assertTrue(m.startsWith("remote_url 'redis-cluster://kv:***@127.0.0.1:" + port + "': no node of the cluster"
                + " answered (tried 127.0.0.1:" + port + ", each for up to 500 ms: "), m);
        assertTrue(m.contains("Connection refused"), m);
        assertFalse(stackTrace(e).contains(SECRET), "the password in the stack trace");
        assertTrue(ms < 5000, ms + " ms");
        // a single server that is not up yet is no error: its tier tries again on use
        try (RedisTier t = new RedisTier("redis://127.0.0.1:" + port, null, SECRET, Duration.ofMillis(200))) {
            assertFalse(t.contains(new CacheKey("m", 1, 0, "ab", "bfloat16", null)));
            assertEquals("RedisTier[redis://127.0.0.1:" + port + "]", t.toString());
            t.close(); // twice: nothing
        }
    }
}
