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

    /**
     * The tiny Llama (Qwen2.5's template) with {@code <think>} and {@code </think>} as single
     * added tokens, as Qwen3's and DeepSeek-R1's tokenizers have them: they take the ids of the
     * BPE's last two merges, which no other merge builds on, so every other token stays as it was.
     */
    static Path thinkingModel(Path dir) throws Exception {
        Path model = ToolCallingTest.model(dir);
        Path file = model.resolve("tokenizer.json");
        ObjectNode t = (ObjectNode) JSON.readTree(file.toFile());
        ObjectNode vocab = (ObjectNode) t.path("model").path("vocab");
        ArrayNode merges = (ArrayNode) t.path("model").path("merges");
        int size = vocab.size();
        // the library numbers added tokens in the order the file lists them: ascending ids
        for (String tag : new String[] {"<think>", "</think>"}) {
            // the second-to-last merge makes id size - 2 (for <think>), then the last one size - 1
            JsonNode merge = merges.remove(merges.size() - (tag.equals("<think>") ? 2 : 1));
            String merged = merge.get(0).asText() + merge.get(1).asText();
            int id = vocab.path(merged).asInt(-1);
            assertEquals(tag.equals("<think>") ? size - 2 : size - 1, id, "the last merges make the last ids: " + merged);
            vocab.remove(merged);
            ObjectNode added = ((ArrayNode) t.path("added_tokens")).addObject();
            added.put("id", id);
            added.put("content", tag);
            added.put("single_word", false);
            added.put("lstrip", false);
            added.put("rstrip", false);
            added.put("normalized", false);
            added.put("special", false);
        }
        Files.writeString(file, JSON.writeValueAsString(t));
        return model;
    }

    private static void assertValue(JsonNode schema, String text, String what) throws Exception {
        var errors = com.networknt.schema.SchemaRegistry.withDefaultDialect(com.networknt.schema.SpecificationVersion.DRAFT_2020_12)
                .getSchema(schema.toString()).validate(text, com.networknt.schema.InputFormat.JSON);
        assertTrue(errors.isEmpty(), what + ": " + text + " breaks the schema: " + errors);
    }

    @Test
    void aReasoningModelThinksFreelyThenItsContentIsGuided(@TempDir Path dir) throws Exception {
        Path model = thinkingModel(Files.createDirectory(dir.resolve("model")));
        JsonNode schema = JSON.readTree("""
                {"type": "object", "properties": {"sky": {"enum": ["sunny", "rainy"]}, "warm": {"type": "boolean"}},
                 "required": ["sky", "warm"], "additionalProperties": false}""");
        JsonNode hi = JSON.readTree("[{\"role\": \"user\", \"content\": \"Weather in Zürich?\"}]");
        StringWriter log = new StringWriter();
        EngineConfig config = EngineConfig.of(model).withLimits(8, 64);
        try (ApiServer r1 = ApiServer.start(config, "m", "127.0.0.1", 0, HttpPolicy.defaults(), null,
                new DeepSeekR1ReasoningParser(), java.util.function.UnaryOperator.identity(), new PrintWriter(log, true));
             ApiServer qwen3 = ApiServer.start(config, "m", "127.0.0.1", 0, HttpPolicy.defaults(), null,
                     new Qwen3ReasoningParser(), java.util.function.UnaryOperator.identity(), new PrintWriter(log, true))) {
            int close = r1.engine().tokenizer().tokenId("</think>").orElseThrow();
            assertEquals(1, r1.engine().tokenizer().encode("</think>", false).length, "one token");
            ObjectNode job = JSON.createObjectNode();
            ArrayNode requests = job.putArray("requests");
            ObjectNode format = JSON.createObjectNode();
            format.put("type", "json_schema");
            format.putObject("json_schema").put("name", "weather").set("schema", schema);
            // the random model closes its block now and then: sampled, seeded (whole = streamed)
            for (int seed : new int[] {1, 2}) {
                ObjectNode r = request(requests, "r1-" + seed, r1, hi);
                r.put("max_tokens", 300);
                r.set("response_format", format);
                r.put("temperature", 1.0);
                r.put("seed", seed);
                r.putObject("logit_bias").put(String.valueOf(close), 4);
            }
            // a named tool choice: the arguments, guided after the reasoning
            JsonNode weatherTool = JSON.readTree(StructuredOutputTest.TOOLS).get(0);
            ObjectNode named = request(requests, "r1-named", r1, hi);
            named.put("max_tokens", 300);
            named.putArray("tools").add(weatherTool);
            named.putObject("tool_choice").put("type", "function").putObject("function").put("name", "get_weather");
            named.put("temperature", 1.0);
            named.put("seed", 1);
            named.putObject("logit_bias").put(String.valueOf(close), 4);
            // greedy, this model opens a block (in pieces: "<", "th"...) and never closes it; led to
            // start with "{" (a bias that only the first step's mask leaves open), it answers at once
            int[] brace = qwen3.engine().tokenizer().encode("{", false);
            assertEquals(1, brace.length);
            ObjectNode q = request(requests, "qwen3", qwen3, hi);
            q.put("max_tokens", 60);
            q.set("response_format", format);
            q.putObject("logit_bias").put(String.valueOf(brace[0]), 100);
            ObjectNode off = request(requests, "qwen3-off", qwen3, hi);
            off.put("max_tokens", 60);
            off.set("response_format", format);
            off.set("logit_bias", q.get("logit_bias"));
            off.putObject("chat_template_kwargs").put("enable_thinking", false);
            JsonNode out = ServeTesting.sdk(job, Files.readString(ServeTesting.root().resolve(
                    "samples/src/test/node/openai_reasoning.mjs")));

            int thought = 0;
            for (int seed : new int[] {1, 2}) {
                String name = "r1-" + seed;
                JsonNode w = out.path(name).path("whole");
                assertBoth(out, name, w.path("reasoning_content").asText(), w.path("content").isNull() ? null
                        : w.path("content").asText());
                if (w.path("finish_reason").asText().equals("stop")) {
                    // the block closed: what follows is a whole value of the schema
                    assertValue(schema, w.path("content").asText(), name);
                    JsonNode reasoning = w.path("reasoning_content");
                    thought += reasoning.isTextual() && !reasoning.asText().isEmpty() ? 1 : 0;
                } else {
                    assertEquals("length", w.path("finish_reason").asText(), name + ": " + w);
                }
            }
            assertEquals(2, thought, "each sampled answer reasoned, then answered in the schema: " + out);
            JsonNode nw = out.path("r1-named").path("whole");
            assertTrue(nw.path("reasoning_content").isTextual() && !nw.path("reasoning_content").asText().isEmpty(),
                    "the named call came after reasoning: " + nw);
            assertEquals(nw.path("reasoning_content"), out.path("r1-named").path("stream").path("reasoning_content"));
            assertEquals(1, nw.path("tool_calls").size(), nw.toString());
            assertEquals("get_weather", nw.path("tool_calls").get(0).path("name").asText());
            assertEquals("stop", nw.path("finish_reason").asText(), nw.toString());
            assertValue(weatherTool.path("function").path("parameters"), nw.path("tool_calls").get(0).path("arguments").asText(),
                    "named arguments");
            assertEquals(JSON.readTree(nw.path("tool_calls").get(0).path("arguments").asText()), JSON.readTree(out.path("r1-named")
                    .path("stream").path("tool_calls").get(0).path("arguments").asText()), "streamed arguments = whole");

            // qwen3, thinking on: an output that does not open a block is guided from its start
            JsonNode w = out.path("qwen3").path("whole");
            assertBoth(out, "qwen3", w.path("reasoning_content").isNull() ? null : w.path("reasoning_content").asText(),
                    w.path("content").asText());
            assertTrue(w.path("reasoning_content").isNull(), "this model does not open a block: " + w);
            assertEquals("stop", w.path("finish_reason").asText(), w.toString());
            assertValue(schema, w.path("content").asText(), "qwen3");
            JsonNode o = out.path("qwen3-off").path("whole");
            assertEquals(w.path("content"), o.path("content"), "thinking off: guided from the start, as here");
            assertEquals("", log.toString(), "nothing logged");
        }
    }
}
