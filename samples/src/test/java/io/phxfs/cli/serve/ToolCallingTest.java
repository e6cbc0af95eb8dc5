package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.EngineConfig;
import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.GenerationListener;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.tools.HermesToolParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Tool calling end to end through {@code phoenix serve} and OpenAI's Node SDK, on the tiny Llama
 * fixture given Qwen2.5's chat template (chat-templates/templates/qwen2.jinja) and the hermes
 * parser. The request side is real: usage.prompt_tokens equals the tokenizer's count of
 * jinja2's render of the same conversation with the tools (expected.json). A random tiny model
 * writes no tool calls, so for the output side each token of a real generation has its text
 * replaced by the next piece of a Hermes-format answer (ServeContext's listener tap): the
 * engine's tokens, finish and usage stay real, and the real parser, chunk writer, HTTP server
 * and SDK do the rest. The pieces are 3 characters, so tags and JSON are split across tokens.
 */
class ToolCallingTest {
    private static final Path TEMPLATES = ServeTesting.root().resolve(
            "phoenix-serving/src/test/resources/chat-templates");

    /** What the scripted model answers: text, then two calls in Qwen2.5's format. */
    static final String ANSWER = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\","
            + " \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\":"
            + " {\"c\": [3]}}}\n</tool_call>";

    /** The tiny Llama checkpoint with Qwen2.5's tool-aware chat template. */
    static Path model(Path dir) throws Exception {
        Path src = ServeTesting.model(ServeTesting.LLAMA);
        try (var files = Files.list(src)) {
            for (Path f : files.toList()) {
                if (!f.getFileName().toString().equals("chat_template.jinja")) {
                    Files.copy(f, dir.resolve(f.getFileName()));
                }
            }
        }
        Files.copy(TEMPLATES.resolve("templates/qwen2.jinja"), dir.resolve("chat_template.jinja"));
        return dir;
    }

    /**
     * Each token's text replaced by the next {@code size} characters of {@code answer}, what is
     * left sent before the finish; the engine's token count, finish reason and usage are kept.
     */
    static UnaryOperator<GenerationListener> scripted(String answer, int size) {
        return real -> new GenerationListener() {
            private int at;

            @Override
            public void onStart(int promptTokens, int cachedTokens) {
                real.onStart(promptTokens, cachedTokens);
            }

            @Override
            public void onText(String piece, int[] tokenIds) {
                int end = Math.min(answer.length(), at + size);
                // never a lone surrogate: the detokenizer releases whole characters
                if (end < answer.length() && Character.isHighSurrogate(answer.charAt(end - 1))) {
                    end++;
                }
                real.onText(answer.substring(at, end), tokenIds);
                at = end;
            }

            @Override
            public void onFinish(FinishReason reason, Usage usage) {
                if (at < answer.length()) {
                    real.onText(answer.substring(at), new int[0]);
                    at = answer.length();
                }
                real.onFinish(reason, usage);
            }

            @Override
            public void onError(Throwable error) {
                real.onError(error);
            }
        };
    }

    /** jinja2's render (expected.json) of a cases.json conversation with qwen2.jinja, the tools and the generation prompt. */
    private static String reference(JsonNode expected, String conversation) {
        for (JsonNode r : expected.get("templates").get("qwen2.jinja")) {
            if (r.get("conversation").asText().equals(conversation) && r.get("extra").asInt() == 1
                    && r.get("add_generation_prompt").asBoolean()) {
                return r.get("text").asText();
            }
        }
        throw new AssertionError("no render of " + conversation);
    }

    private static void assertCalls(JsonNode calls, String what) {
        assertEquals(2, calls.size(), what + ": " + calls);
        assertEquals("get_weather", calls.get(0).path("name").asText(), what);
        assertEquals("{\"city\": \"Zürich\", \"unit\": \"celsius\"}", calls.get(0).path("arguments").asText(), what);
        assertEquals("add", calls.get(1).path("name").asText(), what);
        assertEquals("{\"a\": 2, \"b\": {\"c\": [3]}}", calls.get(1).path("arguments").asText(), what);
        for (JsonNode c : calls) {
            assertEquals("function", c.path("type").asText(), what);
            assertTrue(c.path("id").asText().matches("call_[A-Za-z0-9]{24}"), what + ": id " + c.path("id"));
        }
        assertNotEquals(calls.get(0).path("id"), calls.get(1).path("id"), what + ": distinct ids");
    }

    @Test
    void theSdkGetsToolCallsWholeStreamedAndThroughItsHelpers(@TempDir Path dir) throws Exception {
        JsonNode cases = JSON.readTree(TEMPLATES.resolve("cases.json").toFile());
        JsonNode expected = JSON.readTree(TEMPLATES.resolve("expected.json").toFile());
        JsonNode tools = null;
        for (JsonNode run : cases.get("template_runs")) {
            if (run.get("template").asText().equals("qwen2.jinja")) {
                tools = run.get("extra").get(1).get("tools");
            }
        }
        StringWriter log = new StringWriter();
        try (ApiServer server = ApiServer.start(EngineConfig.of(model(dir)).withLimits(8, 64), "qwen-tools",
                "127.0.0.1", 0, HttpPolicy.defaults(), new HermesToolParser(), scripted(ANSWER, 3),
                new PrintWriter(log, true))) {
            ObjectNode job = JSON.createObjectNode();
            job.put("baseURL", "http://127.0.0.1:" + server.port() + "/v1");
            job.put("model", "qwen-tools");
            job.put("max_tokens", 40);
            job.set("tools", tools);
            ArrayNode conversations = job.putArray("conversations");
            List<String> names = List.of("single-user", "tool-call");
            for (String name : names) {
                // as clients send them: a call's arguments as a JSON string
                ArrayNode messages = cases.get("conversations").get(name).deepCopy();
                for (JsonNode m : messages) {
                    for (JsonNode call : m.path("tool_calls")) {
                        ObjectNode f = (ObjectNode) call.get("function");
                        f.put("arguments", f.get("arguments").toString());
                    }
                }
                conversations.addObject().set("messages", messages);
            }
            JsonNode out = ServeTesting.sdk(job, Files.readString(ServeTesting.root().resolve(
                    "samples/src/test/node/openai_tools.mjs")));

            for (int i = 0; i < names.size(); i++) {
                String what = names.get(i);
                int prompt = server.engine().tokenizer().encode(reference(expected, what), false).length;
                JsonNode c = out.path("conversations").get(i);
                JsonNode w = c.path("whole");
                assertEquals("Let me check.\n\n", w.path("content").asText(), what + " whole: " + w);
                assertCalls(w.path("tool_calls"), what + " whole");
                assertEquals("tool_calls", w.path("finish_reason").asText(), what + " whole");
                assertEquals(prompt, w.path("prompt_tokens").asInt(), what + ": prompt_tokens is the reference render's");

                JsonNode s = c.path("stream");
                assertEquals(w.path("content"), s.path("content"), what + " streamed: " + s);
                assertCalls(s.path("calls"), what + " streamed");
                assertTrue(s.path("order_ok").asBoolean(), what + ": each call opens with index, id, type and name");
                assertEquals(2, s.path("header_chunks").asInt(), what);
                assertTrue(s.path("argument_chunks").asInt() >= 6, what + ": arguments in fragments: " + s);
                assertEquals("tool_calls", s.path("finish_reason").asText(), what);
                assertEquals(prompt, s.path("prompt_tokens").asInt(), what);

                JsonNode h = c.path("helper");
                assertEquals(w.path("content"), h.path("content"), what + " stream helper: " + h);
                assertCalls(h.path("tool_calls"), what + " stream helper");
                assertEquals("tool_calls", h.path("finish_reason").asText(), what);
                assertEquals(2, h.path("done_events").size(), what + ": the SDK's arguments.done events");

                JsonNode one = c.path("single");
                assertEquals(1, one.path("tool_calls").size(), what + " parallel_tool_calls false: " + one);
                assertEquals("get_weather", one.path("tool_calls").get(0).path("name").asText());
                assertEquals("tool_calls", one.path("finish_reason").asText());
            }
            // tool_choice "none": the tools are rendered, the output is text
            JsonNode none = out.path("none");
            assertEquals(ANSWER, none.path("content").asText(), none.toString());
            assertTrue(!none.path("has_tool_calls").asBoolean(), none.toString());
            assertNotEquals("tool_calls", none.path("finish_reason").asText());
            assertEquals(server.engine().tokenizer().encode(reference(expected, "single-user"), false).length,
                    none.path("prompt_tokens").asInt());

            // runTools ran both functions with the parsed arguments, sent the results back, and the
            // server took that conversation (the calls and the tool messages) for a second completion
            JsonNode run = out.path("run_tools");
            assertEquals("get_weather", run.path("calls_run").get(0).path("name").asText(), run.toString());
            assertEquals("Zürich", run.path("calls_run").get(0).path("args").path("city").asText(), run.toString());
            assertEquals(3, run.path("calls_run").get(1).path("args").path("b").path("c").get(0).asInt(), run.toString());
            List<String> roles = new ArrayList<>();
            run.path("roles").forEach(r -> roles.add(r.asText()));
            assertEquals(List.of("user", "assistant", "tool", "tool", "assistant"), roles.subList(0, 5), run.toString());
            assertEquals("", log.toString(), "nothing logged");
        }
    }

    @Test
    void autoToolChoiceNeedsBothFlagsAndAKnownParser() {
        ServeOptions base = new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1, 1, -1, null, null, false);
        assertEquals(null, ApiServer.toolParser(base));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApiServer.toolParser(
                new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1, 1, -1, null, null, true)));
        assertEquals("--enable-auto-tool-choice requires --tool-call-parser (hermes, llama3_json, mistral)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ApiServer.toolParser(
                new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1, 1, -1, null, "hermes", false)));
        assertTrue(e.getMessage().startsWith("--tool-call-parser hermes: also give --enable-auto-tool-choice"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ApiServer.toolParser(
                new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1, 1, -1, null, "pythonic", true)));
        assertEquals("--tool-call-parser pythonic: unknown tool call parser \"pythonic\"; this server has hermes,"
                + " llama3_json, mistral", e.getMessage());
        assertEquals("llama3_json", ApiServer.toolParser(
                new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1, 1, -1, null, "llama3_json", true)).name());
    }
}
