package io.phxfs.cli.serve;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.InputFormat;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.MatchState;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Structured outputs end to end: {@code response_format} (json_schema, json_object) and a forced
 * {@code tool_choice} (a named function, "required") through {@code phoenix serve} and OpenAI's
 * Node SDK, on the tiny random Llama. A random model writes whatever its weights say; guided,
 * whatever it writes must be a value of the schema, which an independent validator
 * (networknt's json-schema-validator) checks on every answer, whole and streamed.
 */
class StructuredOutputTest {
    static final String ANSWER_SCHEMA = """
            {"type": "object", "properties": {
              "city": {"type": "string", "maxLength": 12},
              "unit": {"enum": ["celsius", "fahrenheit"]},
              "days": {"type": "integer"},
              "ok": {"type": "boolean"},
              "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
              "note": {"anyOf": [{"type": "string", "maxLength": 6}, {"type": "null"}]}},
             "required": ["city", "unit", "days", "ok"], "additionalProperties": false}""";

    static final String TOOLS = """
            [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"],
                "additionalProperties": false}}},
             {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
              "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
              "additionalProperties": false}}}]""";

    /**
     * Two tools whose definitions share a name but differ, one in pydantic v1's {@code definitions}:
     * under "required" each keeps its own.
     */
    static final String DEFS_TOOLS = """
            [{"type": "function", "function": {"name": "pick", "parameters": {"type": "object",
              "properties": {"item": {"$ref": "#/$defs/Item"}}, "required": ["item"], "additionalProperties": false,
              "$defs": {"Item": {"enum": ["red", "blue"]}}}}},
             {"type": "function", "function": {"name": "count", "parameters": {"type": "object",
              "properties": {"item": {"$ref": "#/definitions/Item"}}, "required": ["item"], "additionalProperties": false,
              "definitions": {"Item": {"type": "boolean"}}}}}]""";

    static final String REGEX = "\\d{3}-[a-z]{2,5}( [A-Z][a-z]{1,4}){0,2}";
    static final List<String> CHOICES = List.of("New York", "New York City", "Zürich", "São Paulo");
    /** pydantic's spelling of constrained strings: {@code Field(pattern=...)}, with lengths beside. */
    static final String PATTERN_SCHEMA = """
            {"type": "object", "properties": {
              "code": {"type": "string", "pattern": "^[A-Z]{2}-\\\\d{3}$"},
              "phone": {"type": "string", "pattern": "^\\\\+?[0-9 ]{7,12}$", "maxLength": 10},
              "color": {"anyOf": [{"type": "string", "pattern": "^(red|green)$"}, {"type": "null"}]}},
             "required": ["code", "phone", "color"], "additionalProperties": false}""";

    private static void assertValid(JsonNode schema, String text, String what) throws Exception {
        JSON.readTree(text); // JSON at all
        var errors = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(schema.toString())
                .validate(text, InputFormat.JSON);
        assertTrue(errors.isEmpty(), what + ": " + text + " breaks the schema: " + errors);
    }

    @Test
    void everyAnswerIsAValueOfItsSchemaWholeStreamedAndThroughTheSdksHelpers(@TempDir Path dir) throws Exception {
        JsonNode answer = JSON.readTree(ANSWER_SCHEMA);
        JsonNode tools = JSON.readTree(TOOLS);
        try (ServeTesting.Running s = ServeTesting.start(ToolCallingTest.model(dir), "structured", 8, 64, null)) {
            ObjectNode job = JSON.createObjectNode();
            job.put("baseURL", s.v1());
            job.put("model", "structured");
            job.put("max_tokens", 400);
            job.set("schema", answer);
            job.set("tools", tools);
            job.set("messages", JSON.readTree("[{\"role\": \"user\", \"content\": \"What is the weather in Zurich?\"}]"));
            job.set("bad_schema", JSON.readTree("{\"type\": \"object\", \"properties\": {\"zip\": {\"type\": \"string\","
                    + " \"pattern\": \"^(?!0)[0-9]{5}$\"}}}"));
            job.put("regex", REGEX);
            ArrayNode choices = job.putArray("choices");
            CHOICES.forEach(choices::add);
            job.set("pattern_schema", JSON.readTree(PATTERN_SCHEMA));
            // stop tokens the schema's own text uses: they may end only a whole value
            ArrayNode stops = job.putArray("stop_token_ids");
            for (String t : List.of("}", "\"", ",")) {
                for (int id : s.server().engine().tokenizer().encode(t, false)) {
                    stops.add(id);
                }
            }
            job.set("defs_tools", JSON.readTree(DEFS_TOOLS));
            JsonNode out = ServeTesting.sdk(job, Files.readString(ServeTesting.root().resolve(
                    "samples/src/test/node/openai_structured.mjs")));

            JsonNode w = out.path("schema_whole");
            assertEquals("stop", w.path("finish_reason").asText(), "the schema's value ends the answer: " + w);
            assertValid(answer, w.path("content").asText(), "json_schema whole");
            JsonNode st = out.path("schema_stream");
            assertEquals(w.path("content").asText(), st.path("content").asText(), "streamed = whole (greedy)");
            assertEquals("stop", st.path("finish_reason").asText());
            JsonNode parsed = out.path("schema_parse");
            assertEquals(JSON.readTree(w.path("content").asText()), parsed.path("parsed"), "the SDK's parse: " + parsed);

            JsonNode obj = out.path("object_whole");
            if (obj.path("finish_reason").asText().equals("stop")) {
                assertTrue(JSON.readTree(obj.path("content").asText()).isObject(), "json_object: " + obj);
            } else {
                // cut by max_tokens: still every byte on the way to an object
                assertEquals("length", obj.path("finish_reason").asText(), obj.toString());
                MatchState m = JsonSchemaMatcher.anyObject().start();
                for (byte b : obj.path("content").asText().getBytes(StandardCharsets.UTF_8)) {
                    m = m.advance(b & 0xff);
                    assertNotNull(m, "json_object cut short is a prefix of an object: " + obj);
                }
            }
            for (String k : List.of("guided_json", "structured", "ignore_eos", "stop_ids")) {
                JsonNode r = out.path(k);
                assertEquals("stop", r.path("finish_reason").asText(), k + ": " + r);
                assertValid(answer, r.path("content").asText(), k);
            }
            JsonNode dr = out.path("defs_required");
            assertEquals("tool_calls", dr.path("finish_reason").asText(), dr.toString());
            JsonNode defsTools = JSON.readTree(DEFS_TOOLS);
            for (JsonNode c : dr.path("tool_calls")) {
                JsonNode params = c.path("name").asText().equals("pick") ? defsTools.get(0).path("function").path("parameters")
                        : defsTools.get(1).path("function").path("parameters");
                assertValid(params, c.path("arguments").asText(), "a tool's own $defs/definitions: " + c);
            }

            JsonNode weather = tools.get(0).path("function").path("parameters");
            JsonNode named = out.path("named_whole");
            assertEquals(1, named.path("tool_calls").size(), "a named choice calls it: " + named);
            JsonNode call = named.path("tool_calls").get(0);
            assertEquals("get_weather", call.path("name").asText());
            assertTrue(call.path("id").asText().matches("call_[A-Za-z0-9]{24}"), call.toString());
            assertValid(weather, call.path("arguments").asText(), "named whole");
            assertEquals("stop", named.path("finish_reason").asText(), "OpenAI's finish reason for a named choice");
            assertTrue(named.path("content").isNull(), named.toString());
            JsonNode ns = out.path("named_stream");
            assertEquals(1, ns.path("calls").size(), ns.toString());
            assertEquals("get_weather", ns.path("calls").get(0).path("name").asText());
            assertEquals(JSON.readTree(call.path("arguments").asText()), JSON.readTree(ns.path("calls").get(0).path("arguments")
                    .asText()), "streamed arguments = whole");
            assertTrue(ns.path("argument_chunks").asInt() > 2, "the arguments stream token by token: " + ns);

            for (String k : List.of("required_whole", "required_single")) {
                JsonNode r = out.path(k);
                assertEquals("tool_calls", r.path("finish_reason").asText(), k + ": " + r);
                assertTrue(r.path("tool_calls").size() >= 1, k + ": at least one call: " + r);
                for (JsonNode c : r.path("tool_calls")) {
                    String name = c.path("name").asText();
                    JsonNode params = name.equals("get_weather") ? weather : tools.get(1).path("function").path("parameters");
                    assertTrue(name.equals("get_weather") || name.equals("add"), k + ": " + name);
                    assertValid(params, c.path("arguments").asText(), k + " " + name);
                }
            }
            assertEquals(1, out.path("required_single").path("tool_calls").size(), "parallel_tool_calls false: one call");
            JsonNode rs = out.path("required_stream");
            assertEquals("tool_calls", rs.path("finish_reason").asText(), rs.toString());
            JsonNode rw = out.path("required_whole").path("tool_calls");
            assertEquals(rw.size(), rs.path("calls").size(), rs.toString());
            for (int i = 0; i < rw.size(); i++) {
                // greedy: the same calls, the streamed arguments the whole ones' text
                assertEquals(rw.get(i).path("name"), rs.path("calls").get(i).path("name"), rs.toString());
                assertEquals(rw.get(i).path("arguments"), rs.path("calls").get(i).path("arguments"), rs.toString());
            }
            assertTrue(rs.path("argument_chunks").asInt() > rw.size(), "the calls stream as they are written: " + rs);

            JsonNode completion = out.path("completion");
            assertEquals("stop", completion.path("finish_reason").asText(), completion.toString());
            assertValid(answer, completion.path("text").asText(), "completion");

            // text: the whole output matches the expression, or is one of the choices
            java.util.regex.Pattern regex = java.util.regex.Pattern.compile(REGEX);
            for (String k : List.of("regex", "regex_old")) {
                JsonNode r = out.path(k);
                assertTrue(regex.matcher(r.path("content").asText()).matches(), k + ": " + r);
                assertEquals("stop", r.path("finish_reason").asText(), k + ": " + r);
            }
            assertEquals(out.path("regex").path("content").asText(), out.path("regex_stream").path("content").asText(),
                    "streamed = whole (greedy)");
            assertEquals(out.path("regex").path("content"), out.path("regex_old").path("content"), "the same guide");
            for (String k : List.of("choice", "choice_old")) {
                assertTrue(CHOICES.contains(out.path(k).path("content").asText()), k + ": " + out.path(k));
                assertEquals("stop", out.path(k).path("finish_reason").asText(), k + ": " + out.path(k));
            }
            assertTrue(CHOICES.contains(out.path("completion_choice").path("text").asText()), out.path("completion_choice").toString());
            JsonNode pattern = out.path("pattern");
            assertEquals("stop", pattern.path("finish_reason").asText(), pattern.toString());
            assertValid(JSON.readTree(PATTERN_SCHEMA), pattern.path("content").asText(), "schema with patterns");
            JsonNode badRegex = out.path("bad_regex");
            assertEquals(400, badRegex.path("status").asInt(), badRegex.toString());
            assertEquals("structured_outputs.regex", badRegex.path("param").asText(), badRegex.toString());
            assertTrue(badRegex.path("message").asText().contains("lookarounds"), badRegex.toString());
            JsonNode two = out.path("two_kinds");
            assertEquals(400, two.path("status").asInt(), two.toString());
            assertTrue(two.path("message").asText().contains("guided_regex and structured_outputs.choice: send one of them"),
                    two.toString());
            JsonNode badChoice = out.path("bad_choice");
            assertEquals(400, badChoice.path("status").asInt(), badChoice.toString());
            assertTrue(badChoice.path("message").asText().contains("guided_choice[1] must be a string"), badChoice.toString());

            JsonNode bad = out.path("bad");
            assertEquals(400, bad.path("status").asInt(), bad.toString());
            assertEquals("response_format.json_schema.schema", bad.path("param").asText(), bad.toString());
            assertTrue(bad.path("message").asText().contains("pattern"), bad.toString());
            assertTrue(bad.path("message").asText().contains("/properties/zip"), bad.toString());
        }
    }
}
