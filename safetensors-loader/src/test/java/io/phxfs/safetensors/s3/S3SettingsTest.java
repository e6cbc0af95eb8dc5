package io.phxfs.safetensors.s3;

import io.phxfs.safetensors.TempDirs;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The AWS conventions for endpoint, region and credentials; paths of s3:// URLs. */
class S3SettingsTest {
    private static Properties props(Path home, String... kv) {
        Properties p = new Properties();
        p.setProperty("user.home", home.toString());
        for (int i = 0; i < kv.length; i += 2) {
            p.setProperty(kv[i], kv[i + 1]);
        }
        return p;
    }

    @Test
    void environmentVariables() throws IOException {
        Path home = Files.createTempDirectory("phx-aws-home");
        try {
            S3Settings s = S3Settings.fromEnvironment(Map.of("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/",
                    "AWS_ACCESS_KEY_ID", "AKIAENV000", "AWS_SECRET_ACCESS_KEY", "env-secret", "AWS_REGION", "eu-west-1",
                    "PHX_S3_CONCURRENCY", "5", "PHX_S3_RANGE_MB", "12"), props(home));
            assertEquals(URI.create("http://127.0.0.1:9000"), s.endpoint().orElseThrow());
            assertTrue(s.pathStyle(), "a custom endpoint is addressed path-style");
            assertEquals("eu-west-1", s.region());
            assertEquals("AKIAENV000", s.accessKeyId());
            assertEquals("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", s.credentialsSource());
            assertEquals(5, s.concurrency());
            assertEquals(12L << 20, s.rangeBytes());
            assertFalse(s.toString().contains("env-secret"), s.toString());
            assertFalse(s.toString().contains("AKIAENV000"), s.toString());
            assertTrue(s.toString().contains("AKIA****"), s.toString());
            // the S3-specific variable wins; system properties win over variables
            S3Settings t = S3Settings.fromEnvironment(Map.of("AWS_ENDPOINT_URL", "http://a:1",
                    "AWS_ENDPOINT_URL_S3", "http://b:2"), props(home, "aws.region", "ap-south-1"));
            assertEquals(URI.create("http://b:2"), t.endpoint().orElseThrow());
            assertEquals("ap-south-1", t.region());
            assertFalse(t.hasCredentials());
            S3Settings aws = S3Settings.fromEnvironment(Map.of(), props(home));
            assertTrue(aws.endpoint().isEmpty());
            assertFalse(aws.pathStyle(), "AWS itself: virtual-hosted");
            assertEquals("us-east-1", aws.region());
        } finally {
            TempDirs.delete(home);
        }
    }

    @Test
    void profilesOfTheCredentialsAndConfigFiles() throws IOException {
        Path home = Files.createTempDirectory("phx-aws-home");
        try {
            Files.createDirectories(home.resolve(".aws"));
            Files.writeString(home.resolve(".aws/credentials"), """
                    [default]
                    aws_access_key_id = AKIADEFAULT
                    aws_secret_access_key = default-secret
                    [models]
                    aws_access_key_id = AKIAMODELS
                    aws_secret_access_key = models-secret
                    aws_session_token = models-token
                    """);
            Files.writeString(home.resolve(".aws/config"), """
                    [default]
                    region = us-west-2
                    [profile models]
                    region = eu-central-1
                    endpoint_url = http://127.0.0.1:7480
                    """);
            S3Settings d = S3Settings.fromEnvironment(Map.of(), props(home));
            assertEquals("AKIADEFAULT", d.accessKeyId());
            assertEquals("us-west-2", d.region());
            assertEquals("profile 'default'", d.credentialsSource());
            S3Settings m = S3Settings.fromEnvironment(Map.of("AWS_PROFILE", "models"), props(home));
            assertEquals("AKIAMODELS", m.accessKeyId());
            assertEquals("models-token", m.sessionToken());
            assertEquals("eu-central-1", m.region());
            assertEquals(URI.create("http://127.0.0.1:7480"), m.endpoint().orElseThrow());
            assertFalse(m.toString().contains("models-secret") || m.toString().contains("models-token"), m.toString());
            // environment credentials win over the profile's
            S3Settings e = S3Settings.fromEnvironment(Map.of("AWS_PROFILE", "models", "AWS_ACCESS_KEY_ID", "AKIAENV",
                    "AWS_SECRET_ACCESS_KEY", "s"), props(home));
            assertEquals("AKIAENV", e.accessKeyId());
            assertNull(e.sessionToken());
            // AWS_SHARED_CREDENTIALS_FILE moves the file
            Path elsewhere = home.resolve("creds");
            Files.writeString(elsewhere, "[default]\naws_access_key_id = AKIAMOVED\naws_secret_access_key = x\n");
            assertEquals("AKIAMOVED", S3Settings.fromEnvironment(Map.of("AWS_SHARED_CREDENTIALS_FILE",
                    elsewhere.toString()), props(home)).accessKeyId());
        } finally {
            TempDirs.delete(home);
        }
    }

    @Test
    void malformedValuesNameTheVariable() throws IOException {
        Path home = Files.createTempDirectory("phx-aws-home");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> S3Settings.fromEnvironment(Map.of("AWS_ENDPOINT_URL", "localhost:9000"), props(home)));
            assertTrue(e.getMessage().startsWith("AWS_ENDPOINT_URL: 'localhost:9000'"), e.getMessage());
            IllegalArgumentException c = assertThrows(IllegalArgumentException.class,
                    () -> S3Settings.fromEnvironment(Map.of("PHX_S3_CONCURRENCY", "many"), props(home)));
            assertTrue(c.getMessage().startsWith("PHX_S3_CONCURRENCY"), c.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> S3Settings.fromEnvironment(Map.of("PHX_S3_CONCURRENCY", "0"), props(home)));
        } finally {
            TempDirs.delete(home);
        }
    }

    @Test
    void paths() {
        try (S3FileSystem fs = S3FileSystem.open(S3Settings.builder().endpoint(URI.create("http://127.0.0.1:1")).build())) {
            Path dir = fs.path("s3://bucket/models/llama/");
            assertEquals("s3://bucket/models/llama", dir.toString());
            Path shard = dir.resolve(Path.of("model-00001-of-00002.safetensors"));
            assertEquals("s3://bucket/models/llama/model-00001-of-00002.safetensors", shard.toString());
            assertTrue(shard.startsWith(dir));
            assertEquals(dir, shard.getParent());
            assertEquals("model-00001-of-00002.safetensors", dir.relativize(shard).toString());
            assertEquals(dir, dir.resolve("sub/../.").normalize());
            assertEquals(URI.create("s3://bucket/models/llama/a%20b"), dir.resolve("a b").toUri());
            assertEquals(fs.getPath("/bucket/models/llama"), dir);
            assertEquals(3, dir.getNameCount());
            assertTrue(S3FileSystemProvider.isS3(dir));
            assertFalse(S3FileSystemProvider.isS3(Path.of("/tmp")));
            assertEquals(Path.of("relative/dir"), S3FileSystemProvider.pathOf("relative/dir"));
        }
    }
}
