package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The server as curl sees it: the raw server-sent events (framing, headers, one id and created
 * for every chunk, the role first, the finish reason, the usage chunk last, {@code [DONE]}),
 * token-id prompts, {@code /v1/models}, {@code /health} and the Prometheus series of
 * {@code /metrics}.
 */
class CurlTest {
    private static final String FIXTURE = ServeTesting.LLAMA;
    private static ServeTesting.Running server;
    private static JsonNode ref;

    @BeforeAll
    static void start() throws Exception {
        ref = ServeTesting.reference(FIXTURE);
        server = ServeTesting.start(FIXTURE);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
            // refusals are answers, not errors: the server logged nothing
            assertEquals("", server.log().toString());
        }
    }

    /** An HTTP response as {@code curl -i} printed it. */
    record Http(int status, List<String> headers, String body) {
        String header(String name) {
            String p = name.toLowerCase(Locale.ROOT) + ":";
            for (String h : headers) {
                if (h.toLowerCase(Locale.ROOT).startsWith(p)) {
                    return h.substring(p.length()).trim();
                }
            }
            return null;
        }

        JsonNode json() throws IOException {
            return JSON.readTree(body);
        }
    }

    static Http parse(ServeTesting.Proc p) {
        assertEquals(0, p.exit(), p.toString());
        String all = p.out();
        int split = all.indexOf("\r\n\r\n");
        assertTrue(split > 0, "no header block: " + all);
        String[] lines = all.substring(0, split).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        return new Http(status, List.of(lines).subList(1, lines.length), all.substring(split + 4));
    }

    static Http post(ServeTesting.Running s, String path, String body) {
        return parse(ServeTesting.curl("-i", "-N", "-H", "Content-Type: application/json", "--data-binary", body,
                s.base() + path));
    }

    static Http get(ServeTesting.Running s, String path) {
        return parse(ServeTesting.curl("-i", s.base() + path));
    }

    /** The JSON payloads of an event stream, checking its framing; the last event must be [DONE]. */
    static List<JsonNode> events(String body) throws IOException {
        assertTrue(body.endsWith("data: [DONE]\n\n"), "the stream ends with data: [DONE]: " + body);
        String[] events = body.split("\n\n", -1);
        assertEquals("", events[events.length - 1]);
        List<JsonNode> out = new ArrayList<>();
        for (int i = 0; i < events.length - 2; i++) {
            String e = events[i];
            assertTrue(e.startsWith("data: {"), "event " + i + " is one data line: " + e);
            assertFalse(e.contains("\n"), "event " + i + " is one line: " + e);
            out.add(JSON.readTree(e.substring("data: ".length())));
        }
        return out;
    }

    private static JsonNode firstChat() {
        return ref.path("chats").get(0);
    }

    private static String chatBody(boolean stream, boolean includeUsage) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("messages", firstChat().path("messages"));
        b.put("max_tokens", ref.path("max_new_tokens").asInt());
        b.put("temperature", 0);
        b.put("stream", stream);
        if (includeUsage) {
            b.putObject("stream_options").put("include_usage", true);
        }
        return b.toString();
    }

    @Test
    void chatStreamIsServerSentEventsInOpenAisShape() throws IOException {
        Http h = post(server, "/v1/chat/completions", chatBody(true, true));
        assertEquals(200, h.status(), h.body());
        assertTrue(h.header("Content-Type").startsWith("text/event-stream"), h.headers().toString());
        assertEquals("no-cache", h.header("Cache-Control"));
        List<JsonNode> chunks = events(h.body());
        JsonNode first = chunks.get(0);
        String id = first.path("id").asText();
        assertTrue(id.startsWith("chatcmpl-"), id);
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < chunks.size(); i++) {
            JsonNode c = chunks.get(i);
            assertEquals(id, c.path("id").asText(), "chunk " + i);
            assertEquals(first.path("created").asLong(), c.path("created").asLong(), "chunk " + i);
            assertEquals(FIXTURE, c.path("model").asText(), "chunk " + i);
            assertEquals("chat.completion.chunk", c.path("object").asText(), "chunk " + i);
            boolean usageChunk = i == chunks.size() - 1;
            if (usageChunk) {
                assertEquals(0, c.path("choices").size(), "the usage chunk has no choices: " + c);
                JsonNode u = c.path("usage");
                assertEquals(firstChat().path("ids").size(), u.path("prompt_tokens").asInt());
                assertEquals(16, u.path("completion_tokens").asInt());
                assertEquals(firstChat().path("ids").size() + 16, u.path("total_tokens").asInt());
                assertEquals(0, u.path("prompt_tokens_details").path("cached_tokens").asInt());
                continue;
            }
            assertTrue(c.has("usage") && c.path("usage").isNull(), "with include_usage, usage: null: " + c);
            assertEquals(1, c.path("choices").size(), c.toString());
            JsonNode choice = c.path("choices").get(0);
            assertEquals(0, choice.path("index").asInt());
            assertTrue(choice.has("logprobs") && choice.path("logprobs").isNull(), c.toString());
            if (i == 0) {
                assertEquals("assistant", choice.path("delta").path("role").asText(), c.toString());
                assertEquals("", choice.path("delta").path("content").asText(null), c.toString());
            } else {
                assertFalse(choice.path("delta").has("role"), "only the first chunk has the role: " + c);
            }
            boolean last = i == chunks.size() - 2;
            if (last) {
                assertEquals(ServeTesting.finishReason(ref, firstChat()), choice.path("finish_reason").asText(),
                        c.toString());
                assertEquals(0, choice.path("delta").size(), "the last delta is empty: " + c);
            } else {
                assertTrue(choice.path("finish_reason").isNull(), c.toString());
                text.append(choice.path("delta").path("content").asText());
            }
        }
        assertEquals(firstChat().path("generated_text").asText(), text.toString());
    }

    @Test
    void streamWithoutIncludeUsageHasNoUsage() throws IOException {
        Http h = post(server, "/v1/chat/completions", chatBody(true, false));
        assertEquals(200, h.status(), h.body());
        for (JsonNode c : events(h.body())) {
            assertFalse(c.has("usage"), c.toString());
            assertEquals(1, c.path("choices").size(), c.toString());
        }
    }

    @Test
    void completionStreamAndTokenIdPrompts() throws IOException {
        JsonNode c = ref.path("completions").get(1);
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        b.put("stream", true);
        b.putObject("stream_options").put("include_usage", true);
        Http h = post(server, "/v1/completions", b.toString());
        assertEquals(200, h.status(), h.body());
        List<JsonNode> chunks = events(h.body());
        StringBuilder text = new StringBuilder();
        for (JsonNode chunk : chunks) {
            assertEquals("text_completion", chunk.path("object").asText());
            assertEquals(chunks.get(0).path("id").asText(), chunk.path("id").asText());
            assertTrue(chunk.path("id").asText().startsWith("cmpl-"));
            for (JsonNode choice : chunk.path("choices")) {
                text.append(choice.path("text").asText());
            }
        }
        // max_tokens left out: OpenAI's default for completions, 16
        assertEquals(c.path("generated_text").asText(), text.toString());
        assertEquals(16, chunks.get(chunks.size() - 1).path("usage").path("completion_tokens").asInt());
        assertEquals(ServeTesting.finishReason(ref, c),
                chunks.get(chunks.size() - 2).path("choices").get(0).path("finish_reason").asText());
        // one chunk per token, empty text or not (as vLLM streams), then the finish and the usage
        assertEquals(16 + 2, chunks.size(), "a chunk per generated token: " + chunks);

        // the same prompt as the reference's token ids (BOS included): the same continuation
        b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("ids"));
        b.put("max_tokens", 16);
        b.put("temperature", 0);
        Http whole = post(server, "/v1/completions", b.toString());
        assertEquals(200, whole.status(), whole.body());
        assertEquals("application/json", whole.header("Content-Type"));
        JsonNode r = whole.json();
        assertEquals("text_completion", r.path("object").asText());
        assertEquals(c.path("generated_text").asText(), r.path("choices").get(0).path("text").asText());
        assertTrue(r.path("choices").get(0).path("logprobs").isNull());
        assertEquals(c.path("ids").size(), r.path("usage").path("prompt_tokens").asInt());
        assertEquals(0, r.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt());
    }

    @Test
    void stopSeedAndTopKReachTheEngine() throws IOException {
        JsonNode c = ref.path("completions").get(0);
        String full = c.path("generated_text").asText();
        int at = full.indexOf(" break");
        assertTrue(at > 0, full);
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        b.put("max_tokens", 16);
        b.put("stop", " break");
        for (boolean stream : new boolean[] {false, true}) {
            b.put("stream", stream);
            Http h = post(server, "/v1/completions", b.toString());
            assertEquals(200, h.status(), h.body());
            String text;
            String reason;
            if (stream) {
                StringBuilder t = new StringBuilder();
                String r = null;
                for (JsonNode chunk : events(h.body())) {
                    t.append(chunk.path("choices").get(0).path("text").asText());
                    r = chunk.path("choices").get(0).path("finish_reason").asText(null);
                }
                text = t.toString();
                reason = r;
            } else {
                text = h.json().path("choices").get(0).path("text").asText();
                reason = h.json().path("choices").get(0).path("finish_reason").asText();
            }
            assertEquals(full.substring(0, at), text, "the text up to the stop string, without it");
            assertEquals("stop", reason);
        }

        // sampling with a seed: the same seed, the same text
        ObjectNode s = JSON.createObjectNode();
        s.put("model", FIXTURE);
        s.set("prompt", c.path("prompt"));
        s.put("temperature", 1.0);
        s.put("top_p", 0.9);
        s.put("top_k", 50);
        s.put("seed", 1234);
        s.put("max_tokens", 16);
        String a = post(server, "/v1/completions", s.toString()).json().path("choices").get(0).path("text").asText();
        String again = post(server, "/v1/completions", s.toString()).json().path("choices").get(0).path("text").asText();
        assertEquals(a, again, "seed 1234 twice");
    }

    @Test
    void modelsAndHealth() throws IOException {
        Http models = get(server, "/v1/models");
        assertEquals(200, models.status());
        JsonNode m = models.json();
        assertEquals("list", m.path("object").asText());
        assertEquals(1, m.path("data").size());
        JsonNode card = m.path("data").get(0);
        assertEquals(FIXTURE, card.path("id").asText());
        assertEquals("model", card.path("object").asText());
        assertEquals("phoenix", card.path("owned_by").asText());
        assertEquals(server.server().engine().model().created(), card.path("created").asLong());
        // OpenAI's four fields and vLLM's root, parent, max_model_len, permission
        assertEquals(8, card.size(), card.toString());
        assertEquals(server.server().engine().model().contextLength(), card.path("max_model_len").asInt());

        Http one = get(server, "/v1/models/" + FIXTURE);
        assertEquals(200, one.status());
        assertEquals(card, one.json());
        Http other = get(server, "/v1/models/gpt-4o");
        assertEquals(404, other.status());
        assertEquals("model_not_found", other.json().path("error").path("code").asText());

        Http health = get(server, "/health");
        assertEquals(200, health.status());
        assertEquals("application/json", health.header("Content-Type"));
        assertEquals("ok", health.json().path("status").asText());
    }

    @Test
    void metricsArePrometheusTextAfterVllmsNames() throws IOException {
        // one request of known size on top of whatever the other tests sent
        String scrape0 = get(server, "/metrics").body();
        double prompt0 = ServeTesting.sample(scrape0, "phoenix:prompt_tokens_total{model_name=\"" + FIXTURE + "\"}");
        double gen0 = ServeTesting.sample(scrape0, "phoenix:generation_tokens_total{model_name=\"" + FIXTURE + "\"}");
        double len0 = ServeTesting.sample(scrape0,
                "phoenix:request_success_total{finished_reason=\"length\",model_name=\"" + FIXTURE + "\"}");
        assertEquals(200, post(server, "/v1/chat/completions", chatBody(false, false)).status());

        Http h = get(server, "/metrics");
        assertEquals(200, h.status());
        assertTrue(h.header("Content-Type").startsWith("text/plain; version=0.0.4"), h.header("Content-Type"));
        String scrape = h.body();
        String label = "{model_name=\"" + FIXTURE + "\"}";
        for (String histogram : List.of("time_to_first_token_seconds", "inter_token_latency_seconds",
                "e2e_request_latency_seconds", "request_queue_time_seconds", "request_prefill_time_seconds",
                "request_decode_time_seconds")) {
            assertTrue(scrape.contains("# TYPE phoenix:" + histogram + " histogram"), histogram + "\n" + scrape);
            assertTrue(ServeTesting.sample(scrape, "phoenix:" + histogram + "_count" + label) >= 1, histogram);
            assertTrue(scrape.contains("phoenix:" + histogram + "_bucket{model_name=\"" + FIXTURE + "\",le=\"+Inf\"}"),
                    histogram);
        }
        for (String counter : List.of("prefix_cache_queries", "prefix_cache_hits", "prompt_tokens",
                "generation_tokens")) {
            assertTrue(scrape.contains("# TYPE phoenix:" + counter + "_total counter"), counter);
            assertFalse(Double.isNaN(ServeTesting.sample(scrape, "phoenix:" + counter + "_total" + label)), counter);
        }
        for (String gauge : List.of("num_requests_running", "num_requests_waiting")) {
            assertTrue(scrape.contains("# TYPE phoenix:" + gauge + " gauge"), gauge);
            assertEquals(0, ServeTesting.sample(scrape, "phoenix:" + gauge + label), gauge);
        }
        assertEquals(prompt0 + firstChat().path("ids").size(),
                ServeTesting.sample(scrape, "phoenix:prompt_tokens_total" + label));
        assertEquals(gen0 + 16, ServeTesting.sample(scrape, "phoenix:generation_tokens_total" + label));
        assertEquals(len0 + 1, ServeTesting.sample(scrape,
                "phoenix:request_success_total{finished_reason=\"length\",model_name=\"" + FIXTURE + "\"}"));
        assertNotNull(h.header("Content-Length"));
        // no KV tier configured: no tier series
        assertFalse(scrape.contains("phoenix:kv_tier_"), scrape);
    }
}
