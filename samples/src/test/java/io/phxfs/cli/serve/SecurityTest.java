package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * security-1 against real servers: the API key (401 in OpenAI's shape, /health open, /metrics
 * closed unless public, the key never echoed), the server-wide cache salt across two runs on
 * one disk tier, and the limits: body, JSON depth and lengths, header size, idle and header
 * timeouts (a slowloris dribble is cut), the connection cap.
 */
class SecurityTest {
    private static final String FIXTURE = ServeTesting.LLAMA;
    private static final String KEY = "sk-phx-test-7f3a9c1e5b";

    private static String completion(int maxTokens) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("prompt", "The quick brown fox");
        b.put("max_tokens", maxTokens);
        b.put("temperature", 0);
        return b.toString();
    }

    private static CurlTest.Http curl(ServeTesting.Running s, String path, String body, String... headers) {
        List<String> a = new ArrayList<>(List.of("-i"));
        for (String h : headers) {
            a.addAll(List.of("-H", h));
        }
        if (body != null) {
            a.addAll(List.of("-H", "Content-Type: application/json", "--data-binary", body));
        }
        a.add(s.base() + path);
        return CurlTest.parse(ServeTesting.curl(a.toArray(String[]::new)));
    }

    private static void assertUnauthorized(CurlTest.Http h) throws Exception {
        BadRequestsTest.assertError(h, 401, "authentication_error", null, "invalid_api_key", "API key");
        assertFalse(h.body().contains(KEY) && !h.body().isEmpty(), h.body());
        assertEquals("Bearer", h.header("WWW-Authenticate"));
    }

    @Test
    void theApiKeyGuardsV1AndMetricsButNotHealth() throws Exception {
        HttpPolicy p = HttpPolicy.defaults().withApiKey(KEY);
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, p)) {
            assertUnauthorized(curl(s, "/v1/completions", completion(2)));
            assertUnauthorized(curl(s, "/v1/models", null));
            assertUnauthorized(curl(s, "/v1/nothing-here", null));
            assertUnauthorized(curl(s, "/v1/models", null, "Authorization: Bearer " + KEY + "x"));
            assertUnauthorized(curl(s, "/v1/models", null, "Authorization: Bearer " + KEY.substring(1)));
            assertUnauthorized(curl(s, "/v1/models", null, "Authorization: Basic " + KEY));
            assertUnauthorized(curl(s, "/metrics", null));
            assertEquals(200, curl(s, "/health", null).status());
            CurlTest.Http ok = curl(s, "/v1/completions", completion(2), "Authorization: Bearer " + KEY);
            assertEquals(200, ok.status(), ok.body());
            assertEquals(200, curl(s, "/v1/models", null, "authorization: bearer " + KEY).status());
            CurlTest.Http m = curl(s, "/metrics", null, "Authorization: Bearer " + KEY);
            assertEquals(200, m.status());
            assertFalse(m.body().contains(KEY), "the key is not in /metrics");
            assertFalse(s.log().toString().contains(KEY), s.log().toString());
        }
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null,
                p.withMetricsPublic(true))) {
            assertEquals(200, curl(s, "/metrics", null).status());
            assertUnauthorized(curl(s, "/v1/models", null));
        }
        // without a key nothing is asked for
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE)) {
            assertEquals(200, curl(s, "/v1/models", null).status());
            assertEquals(200, curl(s, "/metrics", null).status());
        }
        assertFalse(HttpPolicy.defaults().withApiKey(KEY).toString().contains(KEY));
    }

    private static int cached(ServeTesting.Running s, JsonNode c, String salt) throws Exception {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        if (salt != null) {
            b.put("cache_salt", salt);
        }
        CurlTest.Http h = CurlTest.post(s, "/v1/completions", b.toString());
        assertEquals(200, h.status(), h.body());
        assertEquals(c.path("generated_text").asText(), h.json().path("choices").get(0).path("text").asText());
        return h.json().path("usage").path("prompt_tokens_details").path("cached_tokens").asInt();
    }

    /** Sends until the write-behind store has landed (cached > 0), or 5 s. */
    private static int cachedSoon(ServeTesting.Running s, JsonNode c, String salt) throws Exception {
        int n = 0;
        for (int i = 0; i < 50 && n == 0; i++) {
            n = cached(s, c, salt);
            if (n == 0) {
                Thread.sleep(100);
            }
        }
        return n;
    }

    @Test
    void serverSaltsKeepTwoServersOnOneDiskApart(@TempDir Path tmp) throws Exception {
        Path disk = tmp.resolve("kv");
        Path yaml = tmp.resolve("kv.yaml");
        Files.writeString(yaml, "chunk_size: 256\nlocal_cpu: false\nlocal_disk: \"file://" + disk + "\"\n"
                + "max_local_disk_size: 0.2\n");
        JsonNode longest = null;
        for (JsonNode c : ServeTesting.reference(FIXTURE).path("completions")) {
            if (longest == null || c.path("ids").size() > longest.path("ids").size()) {
                longest = c;
            }
        }
        HttpPolicy a = HttpPolicy.defaults().withCacheSalt("tenant-a-secret");
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, yaml, a)) {
            assertEquals(0, cached(s, longest, null));
            assertTrue(cachedSoon(s, longest, null) > 0, "within one salt the prefix is shared");
            assertEquals(0, cached(s, longest, "user-2"), "another request salt under the same server salt");
        }
        // another run on the same disk: the same server salt finds the chunks, another does not
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, yaml,
                HttpPolicy.defaults().withCacheSalt("tenant-b-secret"))) {
            assertEquals(0, cached(s, longest, null), "another server salt shares nothing");
        }
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, yaml,
                HttpPolicy.defaults())) {
            assertEquals(0, cached(s, longest, null), "no server salt shares nothing with a salted one");
            assertEquals(0, cached(s, longest, "tenant-a-secret"), "nor does the salt given per request");
        }
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, yaml, a)) {
            assertTrue(cached(s, longest, null) > 0, "the same server salt shares across runs");
        }
    }

    private static HttpPolicy tight() {
        return HttpPolicy.defaults().withLimits(64 << 10, 4, 1_500, 1_000, 4096);
    }

    @Test
    void bodiesJsonAndHeadersAreBounded() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, tight())) {
            // a body past --max-body-bytes: declared, then chunked (no length known in advance)
            String big = "{\"model\":\"" + FIXTURE + "\",\"prompt\":\"" + "a".repeat(70 << 10) + "\"}";
            BadRequestsTest.assertError(curl(s, "/v1/completions", big), 413, "invalid_request_error", null, null,
                    "bytes");
            BadRequestsTest.assertError(curl(s, "/v1/completions", big, "Transfer-Encoding: chunked"), 413,
                    "invalid_request_error", null, null, "bytes");
            // nesting past 64
            String deep = "{\"model\":\"" + FIXTURE + "\",\"prompt\":\"x\",\"metadata\":" + "[".repeat(200)
                    + "]".repeat(200) + "}";
            BadRequestsTest.assertError(curl(s, "/v1/completions", deep), 400, "invalid_request_error", null, null,
                    "nesting depth");
            String number = "{\"model\":\"" + FIXTURE + "\",\"prompt\":\"x\",\"max_tokens\":" + "9".repeat(500) + "}";
            BadRequestsTest.assertError(curl(s, "/v1/completions", number), 400, "invalid_request_error", null, null,
                    "Number value length");
            // headers past 4 KiB: Jetty's 431, in OpenAI's shape
            CurlTest.Http h = curl(s, "/v1/models", null, "X-Big: " + "b".repeat(8 << 10));
            assertEquals(431, h.status(), h.body());
            assertEquals("invalid_request_error", h.json().path("error").path("type").asText());
            // max_tokens far past the context
            BadRequestsTest.assertError(curl(s, "/v1/completions", completion(1_000_000_000)), 400,
                    "invalid_request_error", "prompt", "context_length_exceeded", "maximum context length is 2048");
            assertEquals(200, curl(s, "/v1/completions", completion(2)).status());
        }
    }

    @Test
    void slowAndSilentClientsAreCutAndConnectionsCapped() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, tight())) {
            // silent: the idle timeout (1.5 s)
            try (Socket so = RawHttp.connect(s, 10_000)) {
                assertTrue(RawHttp.closedWithin(so, 8_000), "a silent connection is closed");
            }
            // slowloris: a header byte every 200 ms never lets the idle timeout fire; the header deadline (1 s) does
            try (Socket so = RawHttp.connect(s, 10_000)) {
                OutputStream out = so.getOutputStream();
                out.write("GET /v1/models HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                CompletableFuture<Boolean> closed = CompletableFuture.supplyAsync(() -> {
                    try {
                        return RawHttp.closedWithin(so, 8_000);
                    } catch (Exception e) {
                        return true;
                    }
                });
                long t0 = System.nanoTime();
                try {
                    for (int i = 0; i < 40 && !closed.isDone(); i++) {
                        out.write('X');
                        out.flush();
                        Thread.sleep(200);
                    }
                } catch (java.io.IOException e) {
                    // cut while writing
                }
                assertTrue(closed.get(10, TimeUnit.SECONDS), "the dribbling client was cut");
                assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(6), "within the header deadline");
            }
            assertEquals(200, curl(s, "/health", null).status());
            // the connection cap (4): four idle clients hold it, a fifth waits until one leaves
            List<Socket> held = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    Socket so = RawHttp.connect(s, 10_000);
                    so.getOutputStream().write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    assertEquals(200, RawHttp.read(so.getInputStream()).status());
                    held.add(so); // kept alive
                }
                assertTrue(ServeTesting.await(() -> s.server().connections() == 4, Duration.ofSeconds(5)));
                try (Socket fifth = RawHttp.connect(s, 700)) {
                    fifth.getOutputStream().write(RawHttp.request("GET", "/health", List.of(), null));
                    boolean answered;
                    try {
                        answered = RawHttp.read(fifth.getInputStream()) != null;
                    } catch (java.net.SocketTimeoutException e) {
                        answered = false;
                    }
                    assertFalse(answered, "past the cap a connection is not served");
                    held.remove(0).close();
                    fifth.setSoTimeout(10_000);
                    CurlTest.Http h = RawHttp.read(fifth.getInputStream());
                    assertNotNull(h, "served once a connection left");
                    assertEquals(200, h.status());
                }
            } finally {
                for (Socket so : held) {
                    so.close();
                }
            }
            assertEquals(200, curl(s, "/v1/completions", completion(2)).status());
        }
    }
}
