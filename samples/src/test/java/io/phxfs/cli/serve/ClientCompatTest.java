package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What clients of a vLLM server send and read, through the real server with curl: the
 * {@code developer} role, vLLM's sampling and stopping fields, fields refused rather than
 * ignored, the model card's {@code max_model_len}, {@code /tokenize}, {@code /detokenize},
 * {@code /version}, a trailing slash and HEAD.
 */
class ClientCompatTest {
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
            assertEquals("", server.log().toString());
        }
    }

    private static CurlTest.Http post(String path, ObjectNode body) {
        return CurlTest.post(server, path, body.toString());
    }

    private static ObjectNode completion(int max) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", ref.get("completions").get(0).get("ids"));
        b.put("max_tokens", max);
        b.put("temperature", 0);
        return b;
    }

    private static ObjectNode chat(String firstRole) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("max_tokens", 6);
        b.put("temperature", 0);
        ArrayNode ms = b.putArray("messages");
        ms.addObject().put("role", firstRole).put("content", "Answer in one word.");
        ms.addObject().put("role", "user").put("content", "Hello!");
        return b;
    }

    private static JsonNode ok(CurlTest.Http h) throws Exception {
        assertEquals(200, h.status(), h.body());
        return h.json();
    }

    @Test
    void theDeveloperRoleIsTheSystemPromptForATemplateThatKnowsOnlySystem() throws Exception {
        JsonNode dev = ok(post("/v1/chat/completions", chat("developer")));
        JsonNode sys = ok(post("/v1/chat/completions", chat("system")));
        assertEquals(sys.path("usage").path("prompt_tokens").asInt(), dev.path("usage").path("prompt_tokens").asInt());
        assertEquals(sys.path("choices").get(0).path("message").path("content").asText(),
                dev.path("choices").get(0).path("message").path("content").asText());
    }

    @Test
    void stopTokenIdsEndTheCompletionAtTheToken() throws Exception {
        int[] g = ServeTesting.JSON.convertValue(ref.get("completions").get(0).get("generated"), int[].class);
        int at = 2;
        while (seen(g, at)) {
            at++;
        }
        ObjectNode b = completion(16);
        b.putArray("stop_token_ids").add(g[at]);
        JsonNode r = ok(post("/v1/completions", b));
        assertEquals("stop", r.path("choices").get(0).path("finish_reason").asText());
        assertEquals(at + 1, r.path("usage").path("completion_tokens").asInt());
    }

    /** Whether g[at] came before it. */
    private static boolean seen(int[] g, int at) {
        return Arrays.stream(Arrays.copyOf(g, at)).anyMatch(x -> x == g[at]);
    }

    @Test
    void logitBiasPenaltiesAndMinPAreHonoured() throws Exception {
        ObjectNode b = completion(3);
        b.putObject("logit_bias").put("300", 100);
        JsonNode forced = ok(post("/v1/completions", b));
        ObjectNode d = JSON.createObjectNode();
        d.putArray("tokens").add(300).add(300).add(300);
        assertEquals(ok(post("/detokenize", d)).path("prompt").asText(),
                forced.path("choices").get(0).path("text").asText());
        // accepted: each changes the tokens, none is refused any more
        ObjectNode p = completion(8);
        p.put("presence_penalty", 0.5).put("frequency_penalty", 0.5).put("repetition_penalty", 1.2)
                .put("min_p", 0.05).put("min_tokens", 4).put("skip_special_tokens", true)
                .put("include_stop_str_in_output", false);
        JsonNode r = ok(post("/v1/completions", p));
        assertEquals(8, r.path("usage").path("completion_tokens").asInt());
        // fields that change nothing a client sees are ignored, as vLLM ignores them
        ObjectNode c = chat("user");
        c.put("user", "u-1").put("store", false).put("service_tier", "auto");
        c.putObject("metadata").put("k", "v");
        c.putObject("prediction").put("type", "content").put("content", "x");
        c.put("reasoning_effort", "low");
        c.putArray("modalities").add("text");
        ok(post("/v1/chat/completions", c));
    }

    static Stream<Arguments> refused() {
        return Stream.of(
                Arguments.of("modalities", JSON.createArrayNode().add("text").add("audio"), "modalities"),
                Arguments.of("audio", JSON.createObjectNode().put("voice", "alloy").put("format", "wav"), "audio"),
                Arguments.of("web_search_options", JSON.createObjectNode(), "web_search_options"),
                Arguments.of("logit_bias", JSON.createObjectNode().put("99999999", 1), "outside the vocabulary"),
                Arguments.of("logit_bias", JSON.createObjectNode().put("abc", 1), "not a token id"),
                Arguments.of("logit_bias", JSON.createObjectNode().put("5", 200), "[-100, 100]"),
                Arguments.of("presence_penalty", JSON.getNodeFactory().numberNode(3), "[-2, 2]"),
                Arguments.of("repetition_penalty", JSON.getNodeFactory().numberNode(0), "greater than 0"),
                Arguments.of("min_tokens", JSON.getNodeFactory().numberNode(50), "max_tokens"),
                Arguments.of("min_p", JSON.getNodeFactory().numberNode(2), "[0, 1]"),
                Arguments.of("stop_token_ids", JSON.getNodeFactory().textNode("2"), "list of token ids"),
                Arguments.of("skip_special_tokens", JSON.getNodeFactory().textNode("no"), "boolean"),
                Arguments.of("n", JSON.getNodeFactory().numberNode(2), "only 1"));
    }

    @ParameterizedTest
    @MethodSource("refused")
    void whatCannotBeHonouredIsA400NamingTheField(String field, JsonNode value, String says) throws Exception {
        ObjectNode b = chat("user");
        b.set(field, value);
        CurlTest.Http h = post("/v1/chat/completions", b);
        assertEquals(400, h.status(), h.body());
        JsonNode e = h.json().path("error");
        assertEquals(field, e.path("param").asText(), h.body());
        assertTrue(e.path("message").asText().contains(says), h.body());
    }

    @Test
    void theModelCardCarriesVllmsFieldsAndATrailingSlashIsNoOtherPath() throws Exception {
        for (String path : List.of("/v1/models", "/v1/models/")) {
            JsonNode m = ok(CurlTest.get(server, path)).path("data").get(0);
            assertEquals(FIXTURE, m.path("id").asText());
            assertEquals(2048, m.path("max_model_len").asInt(), m.toString());
            assertEquals(FIXTURE, m.path("root").asText());
            assertTrue(m.has("parent") && m.get("parent").isNull());
            assertEquals("model_permission", m.path("permission").get(0).path("object").asText());
        }
        assertEquals(2048, ok(CurlTest.get(server, "/v1/models/" + FIXTURE + "/")).path("max_model_len").asInt());
        // HEAD: the headers of GET, no body
        ServeTesting.Proc head = ServeTesting.curl("-I", server.base() + "/v1/models");
        assertTrue(head.out().startsWith("HTTP/1.1 200"), head.toString());
    }

    @Test
    void tokenizeDetokenizeAndVersion() throws Exception {
        JsonNode c = ref.get("completions").get(0);
        ObjectNode t = JSON.createObjectNode();
        t.put("model", FIXTURE).put("prompt", c.get("prompt").asText());
        JsonNode tok = ok(post("/tokenize", t));
        int[] ids = JSON.convertValue(c.get("ids"), int[].class);
        assertArrayEquals(ids, JSON.convertValue(tok.get("tokens"), int[].class));
        assertEquals(ids.length, tok.path("count").asInt());
        assertEquals(2048, tok.path("max_model_len").asInt());
        // a chat: the prompt a chat completion of it would have
        ObjectNode m = chat("system");
        m.remove("max_tokens");
        JsonNode chatTok = ok(post("/tokenize", m));
        JsonNode done = ok(post("/v1/chat/completions", chat("system")));
        assertEquals(done.path("usage").path("prompt_tokens").asInt(), chatTok.path("count").asInt());
        // back: the special tokens kept
        ObjectNode d = JSON.createObjectNode();
        d.set("tokens", tok.get("tokens"));
        assertEquals(ref.get("bos_token").asText() + c.get("prompt").asText(),
                ok(post("/detokenize", d)).path("prompt").asText());
        d.putArray("tokens").add(-1);
        assertEquals(400, post("/detokenize", d).status());
        t.put("model", "other");
        assertEquals(404, post("/tokenize", t).status());
        assertTrue(ok(CurlTest.get(server, "/version")).path("version").asText().matches("\\d+\\.\\d+.*"));
    }
}
