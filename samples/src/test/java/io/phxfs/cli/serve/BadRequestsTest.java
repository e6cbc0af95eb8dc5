package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every refusal in OpenAI's error shape with its status, type, param and code, sent with curl;
 * after each one a good request still gets the reference's greedy output.
 */
class BadRequestsTest {
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

    private static ObjectNode completion() {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("prompt", "The quick brown fox");
        b.put("max_tokens", 4);
        return b;
    }

    private static ObjectNode chat() {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.putArray("messages").addObject().put("role", "user").put("content", "Hello!");
        b.put("max_tokens", 4);
        return b;
    }

    /** A function tool as the SDKs send it. */
    private static java.util.Map<String, Object> tool(String name) {
        return java.util.Map.of("type", "function", "function", java.util.Map.of("name", name, "description", "d",
                "parameters", java.util.Map.of("type", "object", "properties", java.util.Map.of())));
    }

    @Test
    void toolsWithToolChoiceNoneAreAnsweredAsText() throws IOException {
        // the fixture's template ignores tools: the same prompt, so the same greedy answer as without them
        ObjectNode plain = with(chat(), "temperature", 0);
        CurlTest.Http without = CurlTest.post(server, CHAT, plain.toString());
        CurlTest.Http with = CurlTest.post(server, CHAT, with(with(plain.deepCopy(), "tools", List.of(tool("a"))),
                "tool_choice", "none").toString());
        assertEquals(200, with.status(), with.body());
        JsonNode m = with.json().path("choices").get(0).path("message");
        assertEquals(without.json().path("choices").get(0).path("message").path("content"), m.path("content"));
        assertTrue(!m.has("tool_calls"), m.toString());
        assertEquals(without.json().path("usage").path("prompt_tokens"), with.json().path("usage").path("prompt_tokens"));
    }

    private static ObjectNode with(ObjectNode b, String field, Object value) {
        b.set(field, JSON.valueToTree(value));
        return b;
    }

    private static ObjectNode without(ObjectNode b, String field) {
        b.remove(field);
        return b;
    }

    private static final String C = "/v1/completions";
    private static final String CHAT = "/v1/chat/completions";
    private static final String JSON_TYPE = "application/json";

    /** method, path, content type, body, status, type, param, code, words of the message. */
    static Stream<Arguments> refusals() {
        String bad = "invalid_request_error";
        int[] longPrompt = new int[2046]; // and max_tokens 4: past the context of 2,048
        List<Integer> outside = new ArrayList<>(List.of(0, 44, 1_000_000));
        return Stream.of(
                Arguments.of("POST", C, JSON_TYPE, "{\"model\": \"" + FIXTURE + "\", \"prompt\": ", 400, bad, null, null,
                        "could not parse the JSON body"),
                Arguments.of("POST", C, JSON_TYPE, "[1, 2]", 400, bad, null, null, "must be a JSON object"),
                Arguments.of("POST", C, JSON_TYPE, "", 400, bad, null, null, "empty"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "max_tokens", "16").toString(), 400, bad,
                        "max_tokens", null, "max_tokens must be an integer"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "max_tokens", 2.5).toString(), 400, bad,
                        "max_tokens", null, "max_tokens must be an integer"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "temperature", "hot").toString(), 400, bad,
                        "temperature", null, "temperature must be a number"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "stream", "yes").toString(), 400, bad,
                        "stream", null, "stream must be a boolean"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "prompt", 42).toString(), 400, bad,
                        "prompt", null, "prompt must be a string or a list of token ids"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "prompt", List.of("a", "b")).toString(), 400, bad,
                        "prompt", null, "one prompt per request"),
                Arguments.of("POST", C, JSON_TYPE, without(completion(), "prompt").toString(), 400, bad,
                        "prompt", null, "required"),
                Arguments.of("POST", CHAT, JSON_TYPE, without(chat(), "messages").toString(), 400, bad,
                        "messages", null, "required"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "messages", List.of()).toString(), 400, bad,
                        "messages", null, "empty"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "messages", List.of(java.util.Map.of("content", "x")))
                        .toString(), 400, bad, "messages", null, "messages[0].role: required"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "messages", List.of(java.util.Map.of("role", "user",
                        "content", List.of(java.util.Map.of("type", "image_url"))))).toString(), 400, bad, "messages",
                        null, "only parts of type \"text\""),
                // the template's raise_exception, word for word (transformers' message in reference.json)
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "messages", List.of(java.util.Map.of("role", "tool",
                        "content", "42"))).toString(), 400, bad, "messages", null, "Unsupported role: tool"),
                // tools, checked field by field, the field as the param (OpenAI's way)
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "tools", "get_weather").toString(), 400, bad, "tools",
                        null, "tools must be a list"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(with(chat(), "tools", List.of(tool("a"), java.util.Map.of(
                        "type", "function", "function", java.util.Map.of("description", "no name")))), "tool_choice",
                        "none").toString(), 400, bad, "tools[1].function.name", null, "tools[1].function.name: required"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "tools", List.of(java.util.Map.of("type", "custom",
                        "function", java.util.Map.of("name", "a")))).toString(), 400, bad, "tools[0].type", null,
                        "only \"function\""),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "tools", List.of(java.util.Map.of("type", "function",
                        "function", java.util.Map.of("name", "a", "parameters", "{}"))))
                        .toString(), 400, bad, "tools[0].function.parameters", null, "JSON Schema object"),
                // a tool without "type" is a function, as vLLM defaults it: the request gets as far as tool_choice
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "tools", List.of(java.util.Map.of(
                        "function", java.util.Map.of("name", "a")))).toString(), 400, bad, "tool_choice", null,
                        "\"auto\" tool choice requires --enable-auto-tool-choice"),
                // a server without --enable-auto-tool-choice: vLLM's words, and the way out
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "tools", List.of(tool("a"))).toString(), 400, bad,
                        "tool_choice", null, "\"auto\" tool choice requires --enable-auto-tool-choice and"
                                + " --tool-call-parser to be set: start phoenix serve with"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(with(chat(), "tools", List.of(tool("a"))), "tool_choice",
                        "auto").toString(), 400, bad, "tool_choice", null, "requires --enable-auto-tool-choice"),
                // what guided decoding cannot enforce is refused, naming the keyword and where, not pretended
                Arguments.of("POST", CHAT, JSON_TYPE, with(with(chat(), "tools", List.of(java.util.Map.of("type", "function",
                        "function", java.util.Map.of("name", "a", "parameters", java.util.Map.of("type", "object", "properties",
                                java.util.Map.of("to", java.util.Map.of("type", "string", "format", "ipv6"))))))),
                        "tool_choice", "required").toString(), 400, bad, "tools[0].function.parameters", null,
                        "'format' at /properties/to"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "response_format", java.util.Map.of("type", "json_schema",
                        "json_schema", java.util.Map.of("name", "n", "schema", java.util.Map.of("type", "number",
                                "minimum", 3)))).toString(), 400, bad, "response_format.json_schema.schema", null,
                        "'minimum'"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "response_format", java.util.Map.of("type",
                        "xml")).toString(), 400, bad, "response_format.type", null, "not \"xml\""),
                Arguments.of("POST", CHAT, JSON_TYPE, with(with(with(chat(), "tools", List.of(tool("a"))), "tool_choice",
                        "required"), "response_format", java.util.Map.of("type", "json_object")).toString(), 400, bad,
                        "response_format", null, "send one of them"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(with(chat(), "tools", List.of(tool("a"))), "tool_choice",
                        java.util.Map.of("type", "function", "function", java.util.Map.of("name", "b"))).toString(), 400,
                        bad, "tool_choice.function.name", null, "\"b\" is not among the tools"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "tool_choice", "auto").toString(), 400, bad,
                        "tool_choice", null, "tools must be set"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(with(chat(), "tools", List.of(tool("a"))), "tool_choice",
                        "sometimes").toString(), 400, bad, "tool_choice", null, "tool_choice must be"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "parallel_tool_calls", "yes").toString(), 400, bad,
                        "parallel_tool_calls", null, "must be a boolean"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "messages", List.of(java.util.Map.of("role", "user",
                        "content", "hi"), java.util.Map.of("role", "assistant", "tool_calls", List.of(java.util.Map.of(
                        "id", "c1", "type", "function", "function", java.util.Map.of("name", "a", "arguments",
                        "{\"x\": ")))))).toString(), 400, bad, "messages", null,
                        "messages[1].tool_calls[0].function.arguments is not valid JSON"),
                Arguments.of("POST", C, JSON_TYPE, without(completion(), "model").toString(), 400, bad, "model", null,
                        "you must provide a model parameter"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "model", "gpt-4o").toString(), 404, bad, "model",
                        "model_not_found", "gpt-4o"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "model", "gpt-4o").toString(), 404, bad, "model",
                        "model_not_found", "gpt-4o"),
                // past the context: OpenAI's code and words, which clients match to trim and retry
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "prompt", longPrompt).toString(), 400, bad,
                        "prompt", "context_length_exceeded", "This model's maximum context length is 2048 tokens."
                                + " However, you requested 2050 tokens (2046 in the prompt, 4 in the completion)"),
                Arguments.of("POST", C, JSON_TYPE, without(with(completion(), "prompt", longPrompt), "max_tokens")
                        .toString(), 400, bad, "prompt", "context_length_exceeded", "2062 tokens (2046 in the prompt, 16"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "max_completion_tokens", 5000).toString(), 400, bad,
                        "messages", "context_length_exceeded", "in the messages, 5000 in the completion). Please reduce"
                                + " the length of the messages or max_completion_tokens."),
                Arguments.of("POST", CHAT, JSON_TYPE, without(with(chat(), "messages", List.of(java.util.Map.of("role",
                        "user", "content", "hello ".repeat(3000)))), "max_tokens").toString(), 400, bad, "messages",
                        "context_length_exceeded", "your messages resulted in"),
                // the engine's refusals
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "prompt", outside).toString(), 400, bad,
                        "prompt", null, "1000000 is outside the vocabulary"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "prompt", List.of(0, -3)).toString(), 400, bad,
                        "prompt", null, "-3 is outside the vocabulary"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "max_tokens", 0).toString(), 400, bad,
                        "max_tokens", null, "at least 1"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "max_tokens", -5).toString(), 400, bad,
                        "max_tokens", null, "at least 1"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "max_completion_tokens", 0).toString(), 400, bad,
                        "max_completion_tokens", null, "at least 1"),
                // SamplingParams' checks, the field as the param
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "temperature", 3).toString(), 400, bad,
                        "temperature", null, "temperature"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "top_p", 0).toString(), 400, bad, "top_p", null,
                        "top_p"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "top_k", -2).toString(), 400, bad, "top_k", null,
                        "top_k"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "stop", List.of("a", "b", "c", "d", "e")).toString(),
                        400, bad, "stop", null, "stop"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "stop", "").toString(), 400, bad, "stop", null,
                        "stop"),
                // what this server does not do
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "n", 2).toString(), 400, bad, "n", null,
                        "only 1"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "echo", true).toString(), 400, bad, "echo", null,
                        "echo"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "logprobs", 2).toString(), 400, bad, "logprobs",
                        null, "logprobs: not supported"),
                Arguments.of("POST", CHAT, JSON_TYPE, with(chat(), "logprobs", true).toString(), 400, bad, "logprobs",
                        null, "logprobs: not supported"),
                Arguments.of("POST", C, JSON_TYPE, with(completion(), "stream_options",
                        java.util.Map.of("include_usage", true)).toString(), 400, bad, "stream_options", null,
                        "only allowed when stream is true"),
                // HTTP
                Arguments.of("POST", "/v1/embeddings", JSON_TYPE, completion().toString(), 404, bad, null, null,
                        "Invalid URL (POST /v1/embeddings)"),
                Arguments.of("GET", C, null, null, 405, bad, null, null, "Method GET is not allowed"),
                Arguments.of("DELETE", "/v1/models", null, null, 405, bad, null, null, "Method DELETE"),
                Arguments.of("POST", C, "application/x-www-form-urlencoded", completion().toString(), 415, bad, null,
                        null, "application/json"),
                Arguments.of("POST", C, "text/plain", completion().toString(), 415, bad, null, null, "Content-Type"));
    }

    private static void goodRequestStillSucceeds() throws IOException {
        JsonNode c = ref.path("completions").get(0);
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        b.put("max_tokens", 16);
        CurlTest.Http h = CurlTest.post(server, C, b.toString());
        assertEquals(200, h.status(), h.body());
        assertEquals(c.path("generated_text").asText(), h.json().path("choices").get(0).path("text").asText());
    }

    static void assertError(CurlTest.Http h, int status, String type, String param, String code, String words)
            throws IOException {
        assertEquals(status, h.status(), h.body());
        assertTrue(h.header("Content-Type").startsWith("application/json"), h.headers().toString());
        JsonNode root = h.json();
        assertEquals(1, root.size(), "only \"error\": " + root);
        JsonNode e = root.path("error");
        assertEquals(4, e.size(), "message, type, param, code: " + e);
        assertTrue(e.path("message").isTextual() && e.path("message").asText().contains(words),
                "message says " + words + ": " + e);
        assertEquals(type, e.path("type").asText(), e.toString());
        assertTrue(e.has("param") && e.has("code"), e.toString());
        if (param != null) {
            assertEquals(param, e.path("param").asText(null), e.toString());
        }
        assertEquals(code, e.path("code").isNull() ? null : e.path("code").asText(), e.toString());
    }

    @ParameterizedTest(name = "{0} {1} {4} {8}")
    @MethodSource("refusals")
    void refusedInOpenAisShapeThenAGoodRequestSucceeds(String method, String path, String type, String body,
                                                       int status, String errorType, String param, String code,
                                                       String words) throws IOException {
        List<String> args = new ArrayList<>(List.of("-i", "-X", method));
        if (type != null) {
            args.addAll(List.of("-H", "Content-Type: " + type));
        }
        if (body != null) {
            args.addAll(List.of("--data-binary", body));
        }
        args.add(server.base() + path);
        CurlTest.Http h = CurlTest.parse(ServeTesting.curl(args.toArray(String[]::new)));
        // codes the router sets for its own refusals
        String expectedCode = code != null ? code : switch (status) {
            case 405 -> "method_not_allowed";
            case 415 -> "unsupported_media_type";
            default -> null;
        };
        assertError(h, status, errorType, param, expectedCode, words);
        if (status == 405) {
            assertTrue(h.header("Allow") != null && !h.header("Allow").isBlank(), h.headers().toString());
        }
        goodRequestStillSucceeds();
    }

    @Test
    void everyTemplateRefusalOfTheReferenceIsA400WithItsMessage() throws Exception {
        for (String fixture : List.of(ServeTesting.LLAMA, ServeTesting.GPT2)) {
            JsonNode r = ServeTesting.reference(fixture);
            try (ServeTesting.Running s = fixture.equals(FIXTURE) ? null : ServeTesting.start(fixture)) {
                ServeTesting.Running target = s == null ? server : s;
                for (JsonNode c : r.path("chats")) {
                    if (!c.has("error")) {
                        continue;
                    }
                    ObjectNode b = JSON.createObjectNode();
                    b.put("model", fixture);
                    b.set("messages", c.path("messages"));
                    CurlTest.Http h = CurlTest.post(target, CHAT, b.toString());
                    assertError(h, 400, "invalid_request_error", "messages", null, c.path("error").asText());
                    assertEquals(c.path("error").asText(), h.json().path("error").path("message").asText());
                }
            }
        }
    }

    @Test
    void aModelWithoutChatTemplateRefusesChatsButCompletes(@TempDir Path tmp) throws Exception {
        // tiny-chat-gpt2 keeps its template in tokenizer_config.json: a copy without it
        Path dir = tmp.resolve("no-template");
        Files.createDirectories(dir);
        try (Stream<Path> files = Files.list(ServeTesting.model(ServeTesting.GPT2))) {
            for (Path f : files.toList()) {
                Files.copy(f, dir.resolve(f.getFileName().toString()));
            }
        }
        ObjectNode tc = (ObjectNode) JSON.readTree(dir.resolve("tokenizer_config.json").toFile());
        tc.remove("chat_template");
        JSON.writeValue(dir.resolve("tokenizer_config.json").toFile(), tc);
        try (ServeTesting.Running s = ServeTesting.start(dir, "plain", 8, 64, null)) {
            ObjectNode b = JSON.createObjectNode();
            b.put("model", "plain");
            ArrayNode ms = b.putArray("messages");
            ms.addObject().put("role", "user").put("content", "Hello!");
            assertError(CurlTest.post(s, CHAT, b.toString()), 400, "invalid_request_error", "messages", null,
                    "no chat template");
            JsonNode c = ServeTesting.reference(ServeTesting.GPT2).path("completions").get(0);
            ObjectNode p = JSON.createObjectNode();
            p.put("model", "plain");
            p.set("prompt", c.path("prompt"));
            p.put("temperature", 0);
            CurlTest.Http h = CurlTest.post(s, C, p.toString());
            assertEquals(200, h.status(), h.body());
            assertEquals(c.path("generated_text").asText(), h.json().path("choices").get(0).path("text").asText());
        }
    }

    @Test
    void jettysOwnRefusalsAreJsonToo() throws IOException {
        // a header line without a colon: refused by Jetty's parser, before any handler
        CurlTest.Http h = CurlTest.parse(ServeTesting.curl("-i", "-H", "Content-Length: abc", "-X", "POST",
                server.base() + C));
        assertEquals(400, h.status(), h.body());
        assertEquals("invalid_request_error", h.json().path("error").path("type").asText());
        goodRequestStillSucceeds();
    }
}
