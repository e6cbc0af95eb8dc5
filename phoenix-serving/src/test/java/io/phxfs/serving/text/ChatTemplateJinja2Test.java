package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * ChatTemplate against Python's jinja2 in transformers' environment: every snippet of
 * chat-templates/snippets.txt and every render of the family-style templates in
 * chat-templates/templates/ must give exactly the text (or the raise_exception message) that
 * chat-templates/render_reference.py recorded in expected.json.
 */
class ChatTemplateJinja2Test {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode resource(String name) throws IOException {
        try (InputStream in = ChatTemplateJinja2Test.class.getResourceAsStream("/chat-templates/" + name)) {
            if (in == null) {
                throw new IllegalStateException("missing test resource chat-templates/" + name);
            }
            return JSON.readTree(in);
        }
    }

    private static String text(String name) throws IOException {
        try (InputStream in = ChatTemplateJinja2Test.class.getResourceAsStream("/chat-templates/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static Clock clock(JsonNode cases) {
        return Clock.fixed(LocalDateTime.parse(cases.get("now").asText()).toInstant(ZoneOffset.UTC), ZoneOffset.UTC);
    }

    private static Map<String, Object> map(JsonNode node) {
        return JSON.convertValue(node, new TypeReference<Map<String, Object>>() { });
    }

    private static List<Map<String, Object>> messages(JsonNode node) {
        return JSON.convertValue(node, new TypeReference<List<Map<String, Object>>>() { });
    }

    /** Either the expected text or, for raise_exception, its message; other Python errors must fail too. */
    private static void check(JsonNode expected, java.util.function.Supplier<String> render) {
        if (expected.has("text")) {
            assertEquals(expected.get("text").asText(), render.get());
        } else {
            ChatTemplateException e = assertThrows(ChatTemplateException.class, render::get);
            if (expected.get("error_type").asText().equals("TemplateError")) {
                assertEquals(expected.get("error").asText(), e.getMessage());
            } else {
                assertTrue(e.getMessage().startsWith("chat template"), e.getMessage());
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> snippets() throws IOException {
        JsonNode cases = resource("cases.json");
        JsonNode expected = resource("expected.json").get("snippets");
        Map<String, Object> variables = map(cases.get("snippet_variables"));
        Clock clock = clock(cases);
        List<DynamicTest> tests = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : expected.properties()) {
            tests.add(dynamicTest(e.getKey(), () -> check(e.getValue(), () -> ChatTemplate
                    .of(e.getValue().get("template").asText(), Map.of()).withClock(clock).renderVariables(variables))));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> templates() throws IOException {
        JsonNode cases = resource("cases.json");
        JsonNode expected = resource("expected.json").get("templates");
        Clock clock = clock(cases);
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode run : cases.get("template_runs")) {
            String file = run.get("template").asText();
            Map<String, String> tokens = new HashMap<>();
            run.get("special_tokens").properties().forEach(t -> tokens.put(t.getKey(), t.getValue().asText()));
            ChatTemplate template = ChatTemplate.of(text("templates/" + file), tokens).withClock(clock);
            List<Map<String, Object>> extras = new ArrayList<>();
            if (run.has("extra")) {
                run.get("extra").forEach(x -> extras.add(map(x)));
            } else {
                extras.add(Map.of());
            }
            for (JsonNode r : expected.get(file)) {
                String conversation = r.get("conversation").asText();
                boolean generation = r.get("add_generation_prompt").asBoolean();
                Map<String, Object> extra = extras.get(r.get("extra").asInt());
                List<Map<String, Object>> messages = messages(cases.get("conversations").get(conversation));
                tests.add(dynamicTest(file + " " + conversation + " extra " + r.get("extra").asInt() + " gen " + generation,
                        () -> check(r, () -> template.render(messages, generation, extra))));
            }
        }
        return tests.stream();
    }
}
