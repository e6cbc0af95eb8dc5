package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The server driven by OpenAI's official Node SDK: greedy chats and completions, whole and
 * streamed with include_usage, equal transformers' {@code generate} (the fixtures'
 * reference.json) token for token; the usage counts the reference's prompt ids; the SDK maps
 * the template's refusals to BadRequestError; eight and more streams at once are each exact.
 */
class OpenAiSdkTest {
    private static ObjectNode job(ServeTesting.Running s, String name, JsonNode ref, boolean concurrent) {
        ObjectNode job = JSON.createObjectNode();
        job.put("baseURL", s.v1());
        job.put("model", name);
        job.put("max_tokens", ref.path("max_new_tokens").asInt());
        job.put("concurrent", concurrent);
        ArrayNode chats = job.putArray("chats");
        ArrayNode errors = job.putArray("errors");
        for (JsonNode c : ref.path("chats")) {
            ObjectNode o = JSON.createObjectNode();
            o.set("messages", c.path("messages"));
            (c.has("error") ? errors : chats).add(o);
        }
        ArrayNode completions = job.putArray("completions");
        for (JsonNode c : ref.path("completions")) {
            completions.addObject().set("prompt", c.path("prompt"));
        }
        return job;
    }

    private static void usage(JsonNode ref, JsonNode expected, JsonNode usage, String what) {
        int prompt = expected.path("ids").size();
        int completion = expected.path("generated").size();
        assertEquals(prompt, usage.path("prompt_tokens").asInt(), what + ": prompt_tokens");
        assertEquals(completion, usage.path("completion_tokens").asInt(), what + ": completion_tokens");
        assertEquals(prompt + completion, usage.path("total_tokens").asInt(), what + ": total_tokens");
        assertEquals(0, usage.path("cached_tokens").asInt(), what + ": cached_tokens (no prefix cache)");
    }

    private static void whole(JsonNode ref, JsonNode expected, JsonNode w, String object, String idPrefix,
                              String name, String what) {
        assertEquals(expected.path("generated_text").asText(), w.path("text").asText(), what + ": text");
        assertEquals(ServeTesting.finishReason(ref, expected), w.path("finish_reason").asText(), what);
        assertEquals(object, w.path("object").asText(), what);
        assertTrue(w.path("id").asText().startsWith(idPrefix), what + ": id " + w.path("id"));
        assertEquals(name, w.path("model").asText(), what);
        assertEquals(1, w.path("choices").asInt(), what);
        assertTrue(w.path("logprobs").isNull(), what + ": logprobs");
        long now = System.currentTimeMillis() / 1000;
        assertTrue(Math.abs(now - w.path("created").asLong()) < 600, what + ": created " + w.path("created"));
        usage(ref, expected, w.path("usage"), what);
    }

    private static void stream(JsonNode ref, JsonNode expected, JsonNode s, String object, String idPrefix,
                               String name, String what) {
        assertEquals(expected.path("generated_text").asText(), s.path("text").asText(), what + ": streamed text");
        assertEquals(ServeTesting.finishReason(ref, expected), s.path("finish_reason").asText(), what);
        assertEquals(1, s.path("ids").size(), what + ": every chunk has the same id: " + s.path("ids"));
        assertTrue(s.path("ids").get(0).asText().startsWith(idPrefix), what + ": " + s.path("ids"));
        assertEquals(1, s.path("created").size(), what + ": every chunk has the same created");
        assertEquals(JSON.createArrayNode().add(name), s.path("models"), what);
        assertEquals(JSON.createArrayNode().add(object), s.path("objects"), what);
        assertEquals(1, s.path("usage_chunks").asInt(), what + ": one usage chunk");
        assertEquals(0, s.path("chunks_after_usage").asInt(), what + ": the usage chunk is the last");
        usage(ref, expected, s.path("usage"), what + " (stream)");
    }

    @ParameterizedTest
    @ValueSource(strings = {ServeTesting.LLAMA, ServeTesting.GPT2})
    void greedyOutputsEqualTransformersWholeAndStreamed(String fixture) throws Exception {
        JsonNode ref = ServeTesting.reference(fixture);
        try (ServeTesting.Running s = ServeTesting.start(fixture)) {
            JsonNode out = ServeTesting.sdk(job(s, fixture, ref, false));

            assertEquals(1, out.path("models").size(), out.toString());
            assertEquals(fixture, out.path("models").get(0).path("id").asText());
            assertEquals("model", out.path("models").get(0).path("object").asText());
            assertEquals("phoenix", out.path("models").get(0).path("owned_by").asText());

            int i = 0;
            for (JsonNode c : ref.path("chats")) {
                if (c.has("error")) {
                    continue;
                }
                JsonNode got = out.path("chats").get(i);
                String what = fixture + " chat " + i + " " + c.path("messages");
                whole(ref, c, got.path("whole"), "chat.completion", "chatcmpl-", fixture, what);
                assertEquals("assistant", got.path("whole").path("role").asText(), what);
                stream(ref, c, got.path("stream"), "chat.completion.chunk", "chatcmpl-", fixture, what);
                assertEquals("assistant", got.path("stream").path("first_role").asText(), what + ": first chunk's role");
                assertEquals("", got.path("stream").path("first_content").asText(null), what + ": first chunk's content");
                i++;
            }
            assertEquals(i, out.path("chats").size());
            i = 0;
            for (JsonNode c : ref.path("completions")) {
                JsonNode got = out.path("completions").get(i);
                String what = fixture + " completion " + i + " " + c.path("prompt").asText().substring(0,
                        Math.min(30, c.path("prompt").asText().length()));
                whole(ref, c, got.path("whole"), "text_completion", "cmpl-", fixture, what);
                stream(ref, c, got.path("stream"), "text_completion", "cmpl-", fixture, what);
                i++;
            }
            i = 0;
            for (JsonNode c : ref.path("chats")) {
                if (!c.has("error")) {
                    continue;
                }
                JsonNode e = out.path("errors").get(i++);
                String what = fixture + " refused chat " + c.path("messages");
                assertEquals(400, e.path("status").asInt(), what + ": " + e);
                assertEquals("BadRequestError", e.path("class").asText(), what);
                assertEquals(c.path("error").asText(), e.path("message").asText(), what);
                assertEquals("invalid_request_error", e.path("type").asText(), what);
                assertEquals("messages", e.path("param").asText(), what);
            }
            assertTrue(i > 0, "the fixture has chats its template refuses");
            assertEquals("", s.log().toString(), "nothing logged");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {ServeTesting.LLAMA, ServeTesting.GPT2})
    void concurrentStreamsAreEachExact(String fixture) throws Exception {
        JsonNode ref = ServeTesting.reference(fixture);
        try (ServeTesting.Running s = ServeTesting.start(fixture)) {
            ObjectNode job = job(s, fixture, ref, true);
            job.putArray("errors");
            int n = job.path("chats").size() + job.path("completions").size();
            assertTrue(n >= 8, "at least 8 requests at once: " + n);
            JsonNode out = ServeTesting.sdk(job);
            int i = 0;
            for (JsonNode c : ref.path("chats")) {
                if (!c.has("error")) {
                    stream(ref, c, out.path("chats").get(i++).path("stream"), "chat.completion.chunk", "chatcmpl-",
                            fixture, fixture + " concurrent chat " + c.path("messages"));
                }
            }
            i = 0;
            for (JsonNode c : ref.path("completions")) {
                stream(ref, c, out.path("completions").get(i++).path("stream"), "text_completion", "cmpl-", fixture,
                        fixture + " concurrent completion " + i);
            }
            assertEquals(0, s.server().engine().running());
            assertEquals(0, s.server().engine().waiting());
        }
    }
}
