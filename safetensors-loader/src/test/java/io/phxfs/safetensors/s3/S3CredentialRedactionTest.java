package io.phxfs.safetensors.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.safetensors.ModelFiles;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * S3 credentials never reach a toString(), an exception message, its causes or suppressed
 * errors (security-1): the secret key, the session token, the request's signature and a
 * presigned URL's query, for a wrong key (a real 403 from S3ProxyServer), an unreachable
 * endpoint, bad endpoints and bad profile files.
 */
class S3CredentialRedactionTest {
    private static final String WRONG_SECRET = "wrong-" + S3ProxyServer.SECRET_KEY;
    private static final String TOKEN = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789abcdef";
    /** A SigV4 signature: 64 hex digits. */
    private static final Pattern SIGNATURE = Pattern.compile("[0-9a-f]{64}");

    @TempDir
    Path tmp;

    private static String everything(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    private static void assertClean(String what, String text) {
        for (String secret : List.of(S3ProxyServer.SECRET_KEY, TOKEN, "s3cr3tInUrl", "SIGNATUREVALUE")) {
            assertFalse(text.contains(secret), what + " shows a secret (" + secret + "): " + text);
        }
        assertFalse(SIGNATURE.matcher(text).find(), what + " shows a signature: " + text);
        assertFalse(text.contains("AWS4-HMAC-SHA256 Credential"), what + " shows the Authorization header: " + text);
    }

    @Test
    void wrongSecretKeyWithSessionTokenGivesA403WithoutSecretsOrSignature() throws IOException {
        S3ProxyServer s3 = S3ProxyServer.shared();
        String bucket = "redaction" + Long.toHexString(System.nanoTime());
        s3.createBucket(bucket);
        s3.put(bucket, "m/config.json", "{}".getBytes());
        for (String token : new String[] {null, TOKEN}) {
            S3Settings settings = s3.settings().credentials(S3ProxyServer.ACCESS_KEY, WRONG_SECRET, token).maxAttempts(2).build();
            assertFalse(settings.toString().contains(WRONG_SECRET), settings.toString());
            assertClean("settings", settings.toString());
            try (S3FileSystem bad = S3FileSystem.open(settings)) {
                S3Exception e = assertThrows(S3Exception.class, () -> ModelFiles.open(bad.path("s3://" + bucket + "/m/")));
                // S3Proxy answers a session token with 501 NotImplemented; AWS would say 403
                assertEquals(token == null ? 403 : 501, e.status(), e.getMessage());
                String all = everything(e);
                assertFalse(all.contains(WRONG_SECRET), all);
                assertClean("403", all);
                assertClean("file system", bad.toString());
            }
        }
    }

    @Test
    void unreachableEndpointNamesNoSecret() throws IOException {
        int port = S3ProxyServer.freePort();
        try (S3FileSystem down = S3FileSystem.open(S3Settings.builder().endpoint(URI.create("http://127.0.0.1:" + port))
                .credentials("AKIAREDACTIONTEST", S3ProxyServer.SECRET_KEY, TOKEN).maxAttempts(2)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).timeout(Duration.ofSeconds(5)).build())) {
            S3Exception e = assertThrows(S3Exception.class, () -> ModelFiles.open(down.path("s3://bucket/m/")));
            assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
            assertClean("unreachable", everything(e));
        }
    }

    @Test
    void endpointsWithCredentialsOrAPresignedQueryAreNotEchoed() {
        List<String> bad = List.of(
                "https://AKIA:s3cr3tInUrl@s3.example.com",
                "https://s3.example.com/?X-Amz-Signature=SIGNATUREVALUE&X-Amz-Credential=AKIA/20260101",
                "https://s3.example.com/b/k?X-Amz-Security-Token=" + TOKEN,
                "https://AKIA:s3cr3tInUrl@s3.example.com/a b", // not a URL at all
                "ftp://AKIA:s3cr3tInUrl@s3.example.com",
                "https://u:s3cr3tInUrl@[::1");
        for (String url : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> S3Settings.builder().endpoint(URI.create(url.replace(" ", "%20").replace("[::1", "h"))).build(), url);
            assertClean("builder error for " + url, everything(e));
            Map<String, String> env = Map.of("AWS_ENDPOINT_URL", url);
            IllegalArgumentException f = assertThrows(IllegalArgumentException.class,
                    () -> S3Settings.fromEnvironment(env, new Properties()), url);
            assertClean("environment error for " + url, everything(f));
            assertTrue(f.getMessage().contains("AWS_ENDPOINT_URL"), f.getMessage());
        }
    }

    @Test
    void environmentAndProfileCredentialsStayOutOfMessages() throws IOException {
        Map<String, String> env = Map.of("AWS_ACCESS_KEY_ID", "AKIAREDACTIONTEST", "AWS_SECRET_ACCESS_KEY", S3ProxyServer.SECRET_KEY,
                "AWS_SESSION_TOKEN", TOKEN, "AWS_CONFIG_FILE", tmp.resolve("none").toString(),
                "AWS_SHARED_CREDENTIALS_FILE", tmp.resolve("none2").toString());
        S3Settings s = S3Settings.fromEnvironment(env, new Properties());
        assertClean("settings from the environment", s.toString());
        assertTrue(s.toString().contains("with session token"), s.toString());
        // a credentials file the parser refuses: its message must not quote the secret
        Path creds = tmp.resolve("credentials");
        Files.writeString(creds, "[default]\naws_access_key_id = AKIAREDACTIONTEST\naws_secret_access_key = " + S3ProxyServer.SECRET_KEY
                + "\naws_session_token = " + TOKEN + "\n  " + S3ProxyServer.SECRET_KEY + " broken line without equals\n[unclosed\n");
        Map<String, String> envFile = Map.of("AWS_SHARED_CREDENTIALS_FILE", creds.toString(),
                "AWS_CONFIG_FILE", tmp.resolve("none").toString());
        try {
            S3Settings p = S3Settings.fromEnvironment(envFile, new Properties());
            assertClean("settings from a profile", p.toString());
        } catch (IllegalArgumentException e) {
            assertClean("profile error", everything(e));
        }
    }

    @Test
    void scrubRemovesSignaturesHeadersAndNamedSecrets() {
        String sig = "a".repeat(64);
        String text = "GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=" + sig
                + "&X-Amz-Security-Token=" + TOKEN + " Authorization: AWS4-HMAC-SHA256 Credential=AKIA/2026/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host, Signature=" + sig + "\naws_secret_access_key = " + S3ProxyServer.SECRET_KEY
                + " aws_session_token=" + TOKEN;
        String s = S3Exception.scrub(text);
        assertClean("scrubbed", s);
        assertTrue(s.contains("X-Amz-Signature=***"), s);
        assertTrue(s.contains("aws_secret_access_key = ***"), s);
        S3Exception e = new S3Exception(text, "s3://b/k", 403, "AccessDenied", false, null);
        assertClean("S3Exception", e.getMessage());
    }
}
