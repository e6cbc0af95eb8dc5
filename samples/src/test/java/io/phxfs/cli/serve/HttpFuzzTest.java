package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A seeded fuzz of the HTTP API (-Dphx.fuzz.seed to replay, -Dphx.fuzz.seconds for longer):
 * thousands of malformed, truncated, huge, deeply nested and non-UTF-8 bodies, wrong content
 * types and methods, random paths and garbage request lines, four clients at once, then
 * thousands of connections opened and dropped. Every answer is a 4xx in OpenAI's error shape,
 * or a 200 for valid input; no 5xx, no answer that never comes; afterwards the server is healthy,
 * greedy output is exact, the running and waiting gauges are 0 and the connections are gone.
 */
class HttpFuzzTest {
    private static final String FIXTURE = ServeTesting.LLAMA;
    private static final String[] PATHS = {"/v1/completions", "/v1/chat/completions", "/v1/models",
        "/v1/models/" + FIXTURE, "/health", "/metrics", "/", "/v1", "/v1/", "/v1/embeddings", "/v1/models/x%00y",
        "/v1/completions/../models", "/%2e%2e/etc/passwd", "/v1//completions", "/v1/completions?x=1&y=%zz",
        "/\u00e9t\u00e9", "/v1/models/" + "a".repeat(3000), "*", "http://evil/v1/models"};
    private static final String[] METHODS = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE",
        "CONNECT", "FOO", "get", "P0ST"};
    private static final String[] TYPES = {"application/json", "application/json; charset=utf-8", "text/plain",
        "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/problem+json", "",
        "application/json; charset=latin1", ";;;", "\u00ff/\u00ff"};
    private static final String[] FIELDS = {"model", "prompt", "messages", "max_tokens", "temperature", "top_p",
        "top_k", "seed", "stop", "stream", "stream_options", "n", "cache_salt", "ignore_eos", "logprobs", "echo",
        "max_completion_tokens", "tools", "response_format", "logit_bias", "user"};

    enum Kind { VALID, MUTATED, NESTED, HUGE, NON_UTF8, WRONG_TYPES, HTTP_SHAPE, GARBAGE, TRUNCATED }

    record Case(Kind kind, byte[] wire, boolean halfClose) {
    }

    private static String validBody(Random r) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("max_tokens", 1 + r.nextInt(2));
        b.put("temperature", 0);
        if (r.nextBoolean()) {
            b.put("prompt", "The quick brown fox " + r.nextInt(1000));
        } else {
            b.putArray("messages").addObject().put("role", "user").put("content", "Hi " + r.nextInt(1000));
        }
        if (r.nextInt(4) == 0) {
            b.put("stream", true);
        }
        return b.toString();
    }

    private static String path(ObjectNode body) {
        return body.has("messages") ? "/v1/chat/completions" : "/v1/completions";
    }

    private static JsonNode randomValue(Random r, int depth) {
        return switch (r.nextInt(depth > 3 ? 5 : 7)) {
            case 0 -> JSON.getNodeFactory().nullNode();
            case 1 -> JSON.getNodeFactory().numberNode(r.nextInt(7) - 3 + r.nextDouble() * (r.nextBoolean() ? 1e12 : 1));
            case 2 -> JSON.getNodeFactory().textNode(randomText(r, r.nextInt(20)));
            case 3 -> JSON.getNodeFactory().booleanNode(r.nextBoolean());
            case 4 -> JSON.getNodeFactory().numberNode((long) r.nextInt() * r.nextInt());
            case 5 -> {
                var a = JSON.createArrayNode();
                for (int i = r.nextInt(4); i > 0; i--) {
                    a.add(randomValue(r, depth + 1));
                }
                yield a;
            }
            default -> {
                var o = JSON.createObjectNode();
                for (int i = r.nextInt(4); i > 0; i--) {
                    o.set(FIELDS[r.nextInt(FIELDS.length)], randomValue(r, depth + 1));
                }
                yield o;
            }
        };
    }

    private static String randomText(Random r, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            int k = r.nextInt(10);
            b.appendCodePoint(k < 6 ? 32 + r.nextInt(95) : k < 8 ? r.nextInt(0x3000) : k < 9 ? 0x1F600 + r.nextInt(80)
                    : r.nextInt(32));
        }
        return b.toString();
    }

    private static byte[] post(String path, String type, byte[] body) {
        List<String> h = new ArrayList<>();
        if (type != null) {
            h.add("Content-Type: " + type);
        }
        return RawHttp.request("POST", path, h, body);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static Case next(Random r) {
        Kind kind = Kind.values()[r.nextInt(Kind.values().length)];
        if (kind == Kind.VALID && r.nextInt(3) != 0) {
            kind = Kind.MUTATED; // generations are the slow cases: fewer of them
        }
        String valid = validBody(r);
        String vpath;
        try {
            vpath = path((ObjectNode) JSON.readTree(valid));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        switch (kind) {
            case VALID:
                return new Case(kind, post(vpath, "application/json", utf8(valid)), false);
            case MUTATED: {
                byte[] b = utf8(valid);
                int cut = r.nextInt(b.length + 1);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                out.write(b, 0, cut);
                for (int i = r.nextInt(5); i > 0; i--) {
                    out.write(r.nextInt(256));
                }
                if (r.nextBoolean()) {
                    out.write(b, cut, b.length - cut);
                }
                return new Case(kind, post(vpath, "application/json", out.toByteArray()), false);
            }
            case NESTED: {
                int depth = 1 + r.nextInt(r.nextBoolean() ? 80 : 20_000);
                String open = r.nextBoolean() ? "[" : "{\"a\":";
                String close = open.equals("[") ? "]" : "}";
                String v = open.repeat(depth) + "1" + close.repeat(r.nextInt(4) == 0 ? depth / 2 : depth);
                String body = "{\"model\":\"" + FIXTURE + "\",\"prompt\":\"x\",\"max_tokens\":1,\"metadata\":" + v + "}";
                return new Case(kind, post(vpath, "application/json", utf8(body)), false);
            }
            case HUGE: {
                int n = (r.nextBoolean() ? 300 : 200) << 10; // the cap is 256 KiB
                String big = switch (r.nextInt(3)) {
                    case 0 -> "{\"model\":\"" + FIXTURE + "\",\"prompt\":\"" + "a".repeat(n) + "\"}";
                    case 1 -> "{\"model\":\"" + FIXTURE + "\",\"prompt\":[" + "1,".repeat(n / 2) + "1]}";
                    default -> "{\"model\":\"" + FIXTURE + "\",\"max_tokens\":1" + ",\"k\":1".repeat(n / 6) + "}";
                };
                return new Case(kind, post(vpath, "application/json", utf8(big)), false);
            }
            case NON_UTF8: {
                byte[] b = utf8(valid);
                for (int i = 1 + r.nextInt(4); i > 0; i--) {
                    b[r.nextInt(b.length)] = (byte) (0x80 + r.nextInt(128));
                }
                byte[] bom = r.nextInt(4) == 0 ? new byte[] {(byte) 0xFE, (byte) 0xFF} : new byte[0];
                byte[] all = new byte[bom.length + b.length];
                System.arraycopy(bom, 0, all, 0, bom.length);
                System.arraycopy(b, 0, all, bom.length, b.length);
                return new Case(kind, post(vpath, "application/json", all), false);
            }
            case WRONG_TYPES: {
                ObjectNode o = JSON.createObjectNode();
                o.put("model", r.nextInt(5) == 0 ? "gpt-4o" : FIXTURE);
                for (int i = 1 + r.nextInt(5); i > 0; i--) {
                    o.set(FIELDS[r.nextInt(FIELDS.length)], randomValue(r, 0));
                }
                if (!o.has("max_tokens") || !o.get("max_tokens").canConvertToInt()) {
                    o.put("max_tokens", 1);
                } else {
                    // a field fuzzed to a number: keep valid generations short
                    o.put("max_tokens", Math.max(-3, Math.min(2, o.get("max_tokens").asInt())));
                }
                o.remove("ignore_eos");
                return new Case(kind, post(r.nextBoolean() ? "/v1/completions" : "/v1/chat/completions",
                        "application/json", utf8(o.toString())), false);
            }
            case HTTP_SHAPE: {
                String m = METHODS[r.nextInt(METHODS.length)];
                String p = PATHS[r.nextInt(PATHS.length)];
                List<String> h = new ArrayList<>();
                if (r.nextBoolean()) {
                    h.add("Content-Type: " + TYPES[r.nextInt(TYPES.length)]);
                }
                if (r.nextInt(4) == 0) {
                    h.add("Authorization: Bearer " + randomText(r, 10).replaceAll("[\\r\\n]", ""));
                }
                byte[] body = r.nextBoolean() ? null : utf8(r.nextBoolean() ? valid : randomText(r, 50));
                String head = new String(RawHttp.request(m, p, h, body), StandardCharsets.ISO_8859_1);
                return new Case(kind, head.getBytes(StandardCharsets.UTF_8), false);
            }
            case GARBAGE: {
                byte[] b = new byte[1 + r.nextInt(300)];
                r.nextBytes(b);
                String prefix = switch (r.nextInt(4)) {
                    case 0 -> "GET / HTTP/1.1\r\n";
                    case 1 -> "POST /v1/completions HTTP/1.1\r\nContent-Length: " + (r.nextInt(3) - 1) + "\r\n";
                    case 2 -> "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: x\r\n\r\n";
                    default -> "";
                };
                byte[] p = prefix.getBytes(StandardCharsets.ISO_8859_1);
                byte[] all = new byte[p.length + b.length + 4];
                System.arraycopy(p, 0, all, 0, p.length);
                System.arraycopy(b, 0, all, p.length, b.length);
                System.arraycopy("\r\n\r\n".getBytes(StandardCharsets.US_ASCII), 0, all, p.length + b.length, 4);
                return new Case(kind, all, true);
            }
            default: { // TRUNCATED: the body ends before its Content-Length
                byte[] whole = post(vpath, "application/json", utf8(valid));
                int keep = whole.length - 1 - r.nextInt(utf8(valid).length);
                byte[] part = new byte[keep];
                System.arraycopy(whole, 0, part, 0, keep);
                return new Case(Kind.TRUNCATED, part, true);
            }
        }
    }

    /** What went wrong, for the report; empty when the answer is acceptable. */
    static String check(Case c, CurlTest.Http h, String method) {
        if (h == null) {
            // the server may close on what is not HTTP, and on what the client never finished sending
            return c.kind() == Kind.GARBAGE || c.kind() == Kind.TRUNCATED || c.kind() == Kind.HUGE
                    ? "" : "no answer";
        }
        if (h.status() == 200) {
            return "";
        }
        if (h.status() < 400 || h.status() >= 500) {
            return "status " + h.status() + ": " + h.body();
        }
        if (method.equals("HEAD")) {
            return "";
        }
        try {
            JsonNode root = JSON.readTree(h.body());
            JsonNode e = root.path("error");
            if (root.size() != 1 || e.size() != 4 || !e.path("message").isTextual() || !e.path("type").isTextual()
                    || !e.has("param") || !e.has("code")) {
                return "not OpenAI's error shape: " + h.status() + " " + h.body();
            }
        } catch (IOException x) {
            return "not JSON: " + h.status() + " " + h.body();
        }
        return "";
    }

    @Test
    void nothingFuzzedCrashesOrSticksTheServer() throws Exception {
        long seed = Long.getLong("phx.fuzz.seed", 0x5ec1L);
        long seconds = Long.getLong("phx.fuzz.seconds", 35);
        int maxCases = Integer.getInteger("phx.fuzz.cases", 4000);
        HttpPolicy policy = HttpPolicy.defaults().withLimits(256 << 10, 64, 3_000, 3_000, 8192);
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 4, 16, null, policy)) {
            long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
            AtomicInteger cases = new AtomicInteger();
            Map<String, LongAdder> statuses = new ConcurrentHashMap<>();
            ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                Random r = new Random(seed * 31 + w);
                workers.add(pool.submit(() -> {
                    while (System.nanoTime() < end && cases.incrementAndGet() <= maxCases && failures.size() < 5) {
                        Case c = next(r);
                        String wire = new String(c.wire(), 0, Math.min(c.wire().length, 300), StandardCharsets.ISO_8859_1);
                        String method = wire.split(" ", 2)[0];
                        // 120 s: a mutation can turn a valid body into one without max_tokens
                        // ("max_to9kens"), which generates to the context's end (about 2,000
                        // tokens, 31-53 s on a loaded 2-core machine); a stuck worker never answers
                        try (Socket so = RawHttp.connect(s, 120_000)) {
                            OutputStream out = so.getOutputStream();
                            try {
                                out.write(c.wire());
                                out.flush();
                                if (c.halfClose()) {
                                    so.shutdownOutput();
                                }
                            } catch (IOException e) {
                                // the server answered (413) and closed before all was sent
                            }
                            CurlTest.Http h;
                            try {
                                h = RawHttp.read(so.getInputStream());
                            } catch (java.net.SocketTimeoutException e) {
                                failures.add(c.kind() + ": no answer in 120 s (a stuck worker?) to " + wire);
                                continue;
                            } catch (IOException e) {
                                h = null;
                            }
                            statuses.computeIfAbsent(c.kind() + " " + (h == null ? "closed" : h.status()),
                                    k -> new LongAdder()).increment();
                            String why = check(c, h, method);
                            if (!why.isEmpty()) {
                                failures.add(c.kind() + ": " + why + "\n  for: " + wire);
                            }
                        } catch (IOException e) {
                            failures.add(c.kind() + ": " + e + " for " + wire);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get();
            }
            pool.shutdown();
            int ran = Math.min(cases.get(), maxCases);
            System.out.println("HttpFuzzTest: seed " + seed + ", " + ran + " cases: " + new java.util.TreeMap<>(statuses));
            assertTrue(failures.isEmpty(), "seed " + seed + ":\n" + String.join("\n", failures));
            assertTrue(ran >= 1000, "thousands of cases in the time: " + ran);

            // connections opened and dropped, some mid-request
            Random r = new Random(seed);
            for (int i = 0; i < 2000; i++) {
                try (Socket so = RawHttp.connect(s, 1000)) {
                    so.setSoLinger(r.nextBoolean(), 0); // half of them reset
                    if (r.nextBoolean()) {
                        Case c = next(r);
                        try {
                            so.getOutputStream().write(c.wire(), 0, r.nextInt(c.wire().length + 1));
                        } catch (IOException e) {
                            // the server already answered a malformed prefix and closed (broken pipe or
                            // reset): a client dropping its connection does not care; what the test
                            // checks is that the server is left with no connection and no request
                        }
                    }
                }
            }

            assertTrue(ServeTesting.await(() -> s.server().connections() == 0, Duration.ofSeconds(15)),
                    "connections left open: " + s.server().connections());
            assertTrue(ServeTesting.await(() -> s.server().engine().running() == 0
                    && s.server().engine().waiting() == 0, Duration.ofSeconds(15)));
            String scrape = CurlTest.get(s, "/metrics").body();
            assertEquals(0.0, ServeTesting.sample(scrape, "phoenix:num_requests_running{model_name=\"" + FIXTURE + "\"}"));
            assertEquals(0.0, ServeTesting.sample(scrape, "phoenix:num_requests_waiting{model_name=\"" + FIXTURE + "\"}"));
            assertEquals(200, CurlTest.get(s, "/health").status());
            JsonNode c = ServeTesting.reference(FIXTURE).path("completions").get(0);
            ObjectNode b = JSON.createObjectNode();
            b.put("model", FIXTURE);
            b.set("prompt", c.path("prompt"));
            b.put("temperature", 0);
            CurlTest.Http h = CurlTest.post(s, "/v1/completions", b.toString());
            assertEquals(200, h.status(), h.body());
            assertEquals(c.path("generated_text").asText(), h.json().path("choices").get(0).path("text").asText());
            assertEquals("", s.log().toString(), "nothing the server counts as its own error");
        }
    }
}
