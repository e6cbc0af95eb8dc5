package io.phxfs.safetensors.s3;

import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.SafetensorsFormatException;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a user sees when a bucket, a key or the credentials are wrong, or an object is not
 * what its header says: the URL, the HTTP status and S3's error code, never a secret.
 */
class S3ErrorsTest {
    private static S3FileSystem fs;
    private static final String B = "errors";

    @BeforeAll
    static void upload() throws IOException {
        S3ProxyServer s3 = S3ProxyServer.shared();
        s3.createBucket(B);
        Path llama = Fixtures.file("tiny-llama/model.safetensors");
        byte[] all = Files.readAllBytes(llama);
        s3.put(B, "truncated/model.safetensors", Arrays.copyOf(all, all.length - 1000));
        s3.put(B, "config-only/config.json", "{}".getBytes());
        s3.put(B, "other-names/adapter_model.safetensors", all);
        s3.put(B, "good/model.safetensors", all);
        s3.put(B, "changing/model.safetensors", all);
        fs = S3FileSystem.open(s3.settings().build());
    }

    @AfterAll
    static void close() {
        fs.close();
    }

    private static void assertNoSecret(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            assertFalse(String.valueOf(t.getMessage()).contains(S3ProxyServer.SECRET_KEY), t.toString());
            assertFalse(String.valueOf(t.getMessage()).contains(S3ProxyServer.ACCESS_KEY), t.toString());
        }
    }

    @Test
    void noSuchBucket() {
        WeightLoader loader = WeightLoader.builder().toHost().build();
        S3Exception e = assertThrows(S3Exception.class, () -> loader.load(fs.path("s3://no-such-bucket/model/")));
        assertTrue(e.getMessage().startsWith("s3://no-such-bucket/"), e.getMessage());
        assertTrue(e.getMessage().contains("HTTP 404 NoSuchBucket"), e.getMessage());
        assertEquals(404, e.status());
        assertEquals("NoSuchBucket", e.code());
        assertNoSecret(e);
    }

    @Test
    void noSuchKeyOrPrefix() {
        WeightLoader loader = WeightLoader.builder().toHost().build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> loader.load(fs.path("s3://errors/nothing-here/")));
        assertEquals("open s3://errors/nothing-here: ENOENT (No such file or directory); no object and no objects under"
                + " s3://errors/nothing-here/", e.getMessage());
        IllegalArgumentException f = assertThrows(IllegalArgumentException.class,
                () -> loader.load(fs.path("s3://errors/good/missing.safetensors")));
        assertTrue(f.getMessage().contains("s3://errors/good/missing.safetensors: ENOENT"), f.getMessage());
    }

    @Test
    void prefixWithoutAModelSaysWhatItHolds() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ModelFiles.open(fs.path("s3://errors/config-only/")));
        assertTrue(e.getMessage().startsWith("s3://errors/config-only: no model.safetensors or"
                + " model.safetensors.index.json in the directory"), e.getMessage());
        IllegalArgumentException o = assertThrows(IllegalArgumentException.class,
                () -> ModelFiles.open(fs.path("s3://errors/other-names")));
        assertTrue(o.getMessage().contains("it holds 'adapter_model.safetensors'"), o.getMessage());
    }

    @Test
    void wrongSecretIs403WithS3sCodeAndNoKeys() {
        try (S3FileSystem bad = S3FileSystem.open(S3ProxyServer.shared().settings()
                .credentials(S3ProxyServer.ACCESS_KEY, "not-" + S3ProxyServer.SECRET_KEY, null).build())) {
            S3Exception e = assertThrows(S3Exception.class,
                    () -> WeightLoader.builder().toHost().build().load(bad.path("s3://errors/good/")));
            assertEquals(403, e.status());
            assertTrue(e.getMessage().startsWith("s3://errors/good/"), e.getMessage());
            assertTrue(e.getMessage().contains("HTTP 403 SignatureDoesNotMatch"), e.getMessage());
            assertTrue(e.getMessage().contains("access key AKIA****"), e.getMessage());
            assertNoSecret(e);
            assertFalse(bad.toString().contains(S3ProxyServer.SECRET_KEY), bad.toString());
            assertFalse(bad.settings().toString().contains(S3ProxyServer.ACCESS_KEY), bad.settings().toString());
        }
    }

    @Test
    void anonymousRequestsAreRefusedWithAHint() {
        try (S3FileSystem anon = S3FileSystem.open(S3ProxyServer.shared().settings().credentials(null, null, null)
                .build())) {
            S3Exception e = assertThrows(S3Exception.class, () -> ModelFiles.open(anon.path("s3://errors/good/")));
            assertEquals(403, e.status());
            assertTrue(e.getMessage().contains("no credentials were found: set AWS_ACCESS_KEY_ID"), e.getMessage());
        }
    }

    @Test
    void objectShorterThanItsHeaderSays() {
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class,
                () -> WeightLoader.builder().toHost().build().load(fs.path("s3://errors/truncated/")));
        assertTrue(e.getMessage().startsWith("s3://errors/truncated/model.safetensors"), e.getMessage());
    }

    @Test
    void objectReplacedAfterItsHeaderWasReadFailsTheLoad() throws IOException {
        ModelFiles model = ModelFiles.open(fs.path("s3://errors/changing/"));
        byte[] other = Files.readAllBytes(Fixtures.file("tiny-llama/model.safetensors"));
        other[other.length - 1] ^= 1; // same size, one byte different: a new ETag
        S3ProxyServer.shared().put(B, "changing/model.safetensors", other);
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> WeightLoader.builder().toHost().build().load(model).close());
        assertTrue(e.getMessage().startsWith("s3://errors/changing/model.safetensors"), e.getMessage());
        assertTrue(e.getMessage().contains("HTTP 412"), e.getMessage());
        assertTrue(e.getMessage().contains("replaced while loading"), e.getMessage());
        // and a fresh load sees the new object
        try (S3FileSystem fresh = S3FileSystem.open(S3ProxyServer.shared().settings().build());
             LoadedModel m = WeightLoader.builder().toHost().build().load(fresh.path("s3://errors/changing/"))) {
            assertEquals(model.names(), m.model().names());
        }
    }

    @Test
    void badUrls() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fs.path("s3://Bad_Bucket/x"));
        assertTrue(e.getMessage().contains("not a valid bucket name"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> fs.path("s3:///x"));
        IllegalArgumentException d = assertThrows(IllegalArgumentException.class, () -> fs.path("s3://bucket/a//b"));
        assertTrue(d.getMessage().contains("empty path segment"), d.getMessage());
    }

    @Test
    void unreachableEndpointIsRetriedThenNamed() throws IOException {
        int port = S3ProxyServer.freePort(); // nothing listens there
        try (S3FileSystem down = S3FileSystem.open(S3Settings.builder().endpoint(java.net.URI.create("http://127.0.0.1:"
                + port)).credentials("AKIAX", "secret-x", null).maxAttempts(2)
                .backoff(java.time.Duration.ofMillis(1), java.time.Duration.ofMillis(5)).build())) {
            S3Exception e = assertThrows(S3Exception.class, () -> ModelFiles.open(down.path("s3://errors/good/")));
            assertTrue(e.getMessage().contains("cannot connect to http://127.0.0.1:" + port + " (127.0.0.1:" + port + ": Connection refused)"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("failed 2 tries"), e.getMessage());
            assertTrue(e.retryable());
        }
    }

    @Test
    void anEndpointWhoseNameDoesNotResolveSaysSo() throws IOException {
        // .invalid never resolves (RFC 6761): the resolver's answer, not "(null)"
        try (S3FileSystem nowhere = S3FileSystem.open(S3Settings.builder().endpoint(java.net.URI.create(
                "http://s3.phoenix.invalid:9000")).credentials("AKIAX", "secret-x", null).maxAttempts(1).build())) {
            S3Exception e = assertThrows(S3Exception.class, () -> ModelFiles.open(nowhere.path("s3://errors/good/")));
            assertTrue(e.getMessage().contains("cannot connect to http://s3.phoenix.invalid:9000 (its host name does not resolve"),
                    e.getMessage());
            assertTrue(!e.getMessage().contains("null"), e.getMessage());
        }
    }
}
