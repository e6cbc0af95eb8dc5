package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.EngineConfig;
import io.phxfs.serving.reasoning.DeepSeekR1ReasoningParser;
import io.phxfs.serving.reasoning.Qwen3ReasoningParser;
import io.phxfs.serving.tools.HermesToolParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --reasoning-parser} end to end through {@code phoenix serve} and OpenAI's Node SDK, whole
 * and streamed, on the tiny Llama fixture with Qwen2.5's chat template (as ToolCallingTest). A
 * random tiny model writes no reasoning, so each generated token's text is replaced by the next
 * 3 characters of a scripted answer (ServeContext's listener tap): the tags are split across
 * tokens, and the real parsers, chunk writers, HTTP server and SDK do the rest. Three servers:
 * deepseek_r1, qwen3 with the hermes tool parser, and one without a reasoning parser.
 */
class ReasoningServeTest {
    /** DeepSeek-R1's answer: the prompt opened the block, so the output only closes it. */
    static final String R1 = "Okay, the user greets me in German. 🤔 Grüße\nback.\n</think>\n\nHallo! 👋 Schöne Grüße.";

    /** Qwen3's answer: an explicit block, then a call in Hermes format. */
    static final String QWEN3 = "<think>\nThe user wants Zürich's weather: call get_weather.\n</think>\n\n<tool_call>\n"
            + "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>";

    private static ObjectNode request(ArrayNode requests, String name, ApiServer server, JsonNode messages) {
        ObjectNode r = requests.addObject();
        r.put("name", name);
        r.put("baseURL", "http://127.0.0.1:" + server.port() + "/v1");
        r.put("model", "m");
        r.put("max_tokens", 40);
        r.set("messages", messages);
        return r;
    }

    /** What both the whole and the streamed answer of {@code name} must hold. */
    private static void assertBoth(JsonNode out, String name, String reasoning, String content) {
        JsonNode w = out.path(name).path("whole");
        JsonNode s = out.path(name).path("stream");
        String what = name + ": " + out.path(name);
        assertEquals(reasoning, w.path("reasoning_content").isNull() ? null : w.path("reasoning_content").asText(), what);
        assertEquals(w.path("reasoning_content"), w.path("reasoning"), what + ": reasoning is reasoning_content");
        assertEquals(content, w.path("content").isNull() ? null : w.path("content").asText(), what);
        assertEquals(w.path("reasoning_content"), s.path("reasoning_content"), what + ": streamed reasoning");
        assertEquals(w.path("reasoning"), s.path("reasoning"), what + ": streamed reasoning");
        assertEquals(w.path("content"), s.path("content"), what + ": streamed content");
        assertEquals(w.path("tool_calls"), s.path("tool_calls"), what + ": streamed calls");
        assertEquals(w.path("finish_reason"), s.path("finish_reason"), what);
        assertFalse(s.path("reasoning_after_content").asBoolean(), what + ": reasoning, then content");
        assertFalse(s.path("leaked").asBoolean(), what + ": no think tag in any delta");
    }

    @Test
    void theSdkGetsReasoningApartFromContentWholeAndStreamed(@TempDir Path dir) throws Exception {
        Path model = ToolCallingTest.model(Files.createDirectory(dir.resolve("model")));
        JsonNode cases = JSON.readTree(ServeTesting.root().resolve(
                "phoenix-serving/src/test/resources/chat-templates/cases.json").toFile());
        JsonNode tools = null;
        for (JsonNode run : cases.get("template_runs")) {
            if (run.get("template").asText().equals("qwen2.jinja")) {
                tools = run.get("extra").get(1).get("tools");
            }
        }
        JsonNode hi = JSON.readTree("[{\"role\": \"user\", \"content\": \"Hallo!\"}]");
        JsonNode weather = JSON.readTree("[{\"role\": \"user\", \"content\": \"Weather in Zürich?\"}]");
        StringWriter log = new StringWriter();
        EngineConfig config = EngineConfig.of(model).withLimits(8, 64);
        try (ApiServer r1 = ApiServer.start(config, "m", "127.0.0.1", 0, HttpPolicy.defaults(), null,
                new DeepSeekR1ReasoningParser(), ToolCallingTest.scripted(R1, 3), new PrintWriter(log, true));
             ApiServer qwen3 = ApiServer.start(config, "m", "127.0.0.1", 0, HttpPolicy.defaults(),
                     new HermesToolParser(), new Qwen3ReasoningParser(), ToolCallingTest.scripted(QWEN3, 3),
                     new PrintWriter(log, true));
             ApiServer plain = ApiServer.start(config, "m", "127.0.0.1", 0, HttpPolicy.defaults(), null, null,
                     ToolCallingTest.scripted(R1, 3), new PrintWriter(log, true))) {
            ObjectNode job = JSON.createObjectNode();
            ArrayNode requests = job.putArray("requests");
            request(requests, "r1", r1, hi);
            request(requests, "qwen3-tools", qwen3, weather).set("tools", tools);
            request(requests, "qwen3-no-tools", qwen3, weather);
            ObjectNode off = request(requests, "qwen3-thinking-off", qwen3, weather);
            off.putObject("chat_template_kwargs").put("enable_thinking", false);
            off.put("leak_check", false);
            request(requests, "plain", plain, hi).put("leak_check", false);
            JsonNode out = ServeTesting.sdk(job, Files.readString(ServeTesting.root().resolve(
                    "samples/src/test/node/openai_reasoning.mjs")));

            // deepseek_r1: everything before </think> is reasoning
            assertBoth(out, "r1", "Okay, the user greets me in German. 🤔 Grüße\nback.\n", "\n\nHallo! 👋 Schöne Grüße.");
            assertTrue(out.path("r1").path("stream").path("reasoning_chunks").asInt() > 5, out.toString());

            // qwen3 with tools: the reasoning split off, the call parsed from the content only
            String thought = "\nThe user wants Zürich's weather: call get_weather.\n";
            assertBoth(out, "qwen3-tools", thought, null);
            JsonNode calls = out.path("qwen3-tools").path("whole").path("tool_calls");
            assertEquals(1, calls.size(), calls.toString());
            assertEquals("get_weather", calls.get(0).path("name").asText());
            assertEquals("{\"city\": \"Zürich\"}", calls.get(0).path("arguments").asText());
            assertEquals("tool_calls", out.path("qwen3-tools").path("whole").path("finish_reason").asText());

            // qwen3 without tools: the call's text is content
            assertBoth(out, "qwen3-no-tools", thought, QWEN3.substring(QWEN3.indexOf("</think>") + 8));

            // enable_thinking false: no reasoning, the whole text is content
            assertBoth(out, "qwen3-thinking-off", null, QWEN3);
            assertTrue(out.path("qwen3-thinking-off").path("whole").path("has_reasoning_content").asBoolean(),
                    "with a reasoning parser the field is there, null");

            // without --reasoning-parser the text is returned as it is, with no reasoning field
            assertBoth(out, "plain", null, R1);
            assertFalse(out.path("plain").path("whole").path("has_reasoning_content").asBoolean(), out.toString());
            assertEquals("", log.toString(), "nothing logged");
        }
    }

    @Test
    void anUnknownReasoningParserIsRefusedNamingTheKnownOnes() {
        ServeOptions o = new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1, 1, -1, null, null, false,
                "granite");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApiServer.reasoningParser(o));
        assertEquals("--reasoning-parser granite: unknown reasoning parser \"granite\"; this server has deepseek_r1,"
                + " qwen3", e.getMessage());
        assertEquals(null, ApiServer.reasoningParser(new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null, 1,
                1, -1, null, null, false)));
        assertEquals("qwen3", ApiServer.reasoningParser(new ServeOptions(Path.of("."), "127.0.0.1", 0, "m", null, null,
                1, 1, -1, null, null, false, "qwen3")).name());
    }
}
