package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redis credentials never reach a toString(), an exception message or its causes (security-1):
 * URLs with a password, remote_password, bad URLs, bad configuration files, unreachable servers.
 */
class CredentialRedactionTest {
    private static final String SECRET = "Zq9xSecretPw";

    @TempDir
    Path tmp;

    /** The throwable's every message, its causes' and suppressed ones', and the stack trace text. */
    private static String everything(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    private static void assertClean(String what, String text) {
        assertFalse(text.contains(SECRET), what + " shows the password: " + text);
    }

    @Test
    void parsedUrlsMaskThePassword() {
        for (String url : List.of("redis://user:" + SECRET + "@host:6379/2", "redis://:" + SECRET + "@host", "redis://" + SECRET + "@host",
                "rediss://user:" + SECRET + "@host:6380", "redis-cluster://user:" + SECRET + "@h1:1,h2:2",
                "rediss-cluster://u:" + SECRET + "@[::1]:7000,h2:7001", "redis://user:" + SECRET + "@with@at@host:1")) {
            RemoteUrl u = RemoteUrl.parse(url, "remote_url");
            assertClean("toString of " + url, u.toString());
            assertClean("redact", RemoteUrl.redact(url));
            assertTrue(RemoteUrl.redact(url).contains("***"), RemoteUrl.redact(url));
        }
    }

    @Test
    void badUrlsMaskThePassword() {
        List<String> bad = List.of(
                "redis:/user:" + SECRET + "@host", // no scheme separator
                "ftp://user:" + SECRET + "@host", // scheme
                "redis://user:" + SECRET + "@host:99999", // port
                "redis://user:" + SECRET + "@host:port", // port not a number
                "redis://user:" + SECRET + "@host/db", // database
                "redis://user:" + SECRET + "@host/-1",
                "redis://user:" + SECRET + "@h1:1,h2:2", // a list without -cluster
                "redis-cluster://user:" + SECRET + "@h1:1,,h2:2",
                "redis-cluster://user:" + SECRET + "@h1:1/3",
                "redis://user:" + SECRET + "@host?timeout=1",
                "redis://user:" + SECRET + "%zz@host", // bad escape
                "redis://user:" + SECRET + "@", // no host
                "redis://user:" + SECRET + "@[::1",
                "redis://user:" + SECRET + "@::1:6379",
                "redis://user:" + SECRET + "@ho st:1");
        for (String url : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RemoteUrl.parse(url, "remote_url"), url);
            assertClean("error for " + url, everything(e));
            IllegalArgumentException t = assertThrows(IllegalArgumentException.class,
                    () -> new RedisTier(url, "user", null, Duration.ofMillis(200)).close(), url);
            assertClean("RedisTier error for " + url, everything(t));
            IllegalArgumentException c = assertThrows(IllegalArgumentException.class,
                    () -> KvCacheConfig.builder().remoteUrl(url).remotePassword(SECRET).build(), url);
            assertClean("config error for " + url, everything(c));
        }
    }

    @Test
    void configToStringMasksPasswordAndUrl() {
        KvCacheConfig c = KvCacheConfig.builder().remoteUrl("redis://u:" + SECRET + "@host:1").remotePassword(SECRET)
                .remoteUsername("u").build();
        assertClean("KvCacheConfig.toString", c.toString());
        assertTrue(c.toString().contains("***"), c.toString());
    }

    @Test
    void configFilesWithBadValuesMaskThePassword() throws Exception {
        List<String[]> files = List.of(
                new String[] {"a.yaml", "remote_password: 12345" + SECRET.length() + "\nremote_url: 7\n"},
                new String[] {"n.yaml", "remote_password: " + 987654321 + "\n"},
                new String[] {"b.json", "{\"remote_password\": " + SECRET + "}"}, // unquoted: the parser stops on it
                new String[] {"c.json", "{\"remote_url\": \"redis://u:" + SECRET + "@h:1\", \"remote_password\": \"" + SECRET + "\" ,,}"},
                new String[] {"d.yaml", "remote_password: \"" + SECRET + "\n  bad: [\n"},
                new String[] {"e.yaml", "remote_url: redis://u:" + SECRET + "@h:99999\nremote_password: " + SECRET + "\n"},
                new String[] {"f.yaml", "remote_password: [" + SECRET + "]\n"},
                new String[] {"g.yaml", "remote_password: " + SECRET + "\nno_such_key: 1\n"});
        for (String[] f : files) {
            Path p = tmp.resolve(f[0]);
            Files.writeString(p, f[1]);
            RuntimeException e = assertThrows(RuntimeException.class, () -> KvCacheConfig.load(p), f[1]);
            assertClean("error for " + f[0], everything(e));
        }
        // the numeric one: not echoed either
        Path n = tmp.resolve("num.yaml");
        Files.writeString(n, "remote_password: 424242\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(n));
        assertFalse(everything(e).contains("424242"), e.getMessage());
        assertTrue(e.getMessage().contains("remote_password: expected a string"), e.getMessage());
    }

    @Test
    void unreachableServersMaskThePassword() {
        // what Lettuce logs meanwhile (java.util.logging here) is checked too
        StringBuilder logged = new StringBuilder();
        java.util.logging.Handler h = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                synchronized (logged) {
                    logged.append(new java.util.logging.SimpleFormatter().format(r));
                    if (r.getThrown() != null) {
                        logged.append(everything(r.getThrown()));
                    }
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        h.setLevel(java.util.logging.Level.ALL);
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.addHandler(h);
        try {
            unreachable();
        } finally {
            root.removeHandler(h);
        }
        synchronized (logged) {
            assertClean("logs", logged.toString());
        }
    }

    private void unreachable() {
        // a port nothing listens on: the single server opens lazily, the cluster refuses at once
        for (String url : List.of("redis://user:" + SECRET + "@127.0.0.1:1", "redis-cluster://user:" + SECRET + "@127.0.0.1:1,127.0.0.1:2",
                "rediss-cluster://user:" + SECRET + "@127.0.0.1:1")) {
            try (RedisTier t = new RedisTier(url, null, null, Duration.ofMillis(300))) {
                assertClean("toString", t.toString());
                assertFalse(t.contains(new CacheKey("m", 1, 0, "%064x".formatted(1), "bfloat16", java.util.Map.of())));
                assertClean("stats", t.stats().toString());
            } catch (IllegalArgumentException e) {
                assertClean("error for " + url, everything(e));
                assertTrue(e.getMessage().contains("127.0.0.1"), e.getMessage());
            }
        }
        // remote_password given apart from the URL
        try (RedisTier t = new RedisTier("redis-cluster://127.0.0.1:1", "user", SECRET, Duration.ofMillis(300))) {
            assertClean("toString", t.toString());
        } catch (IllegalArgumentException e) {
            assertClean("error", everything(e));
        }
    }
}
