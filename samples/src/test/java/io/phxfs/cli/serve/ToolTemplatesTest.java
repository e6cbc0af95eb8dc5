package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.text.ChatTemplate;
import io.phxfs.serving.text.ChatTemplateException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

/**
 * Requests with tools, as OpenAI's clients send them (assistant calls' arguments as JSON
 * strings, tools as the SDKs write them), reach the real model templates of phoenix-serving's
 * chat-templates test set exactly as transformers renders the same conversation with the
 * arguments as dicts (expected.json, written by Python's jinja2 in transformers' environment):
 * the tools variable, the parsed arguments and the tool messages are what the templates expect.
 */
class ToolTemplatesTest {
    private static final Path DIR = ServeTesting.root().resolve("phoenix-serving/src/test/resources/chat-templates");

    @TestFactory
    Stream<DynamicTest> openAiRequestsWithToolsRenderAsTransformersDoes() throws Exception {
        JsonNode cases = JSON.readTree(DIR.resolve("cases.json").toFile());
        JsonNode expected = JSON.readTree(DIR.resolve("expected.json").toFile()).get("templates");
        Clock clock = Clock.fixed(LocalDateTime.parse(cases.get("now").asText()).toInstant(ZoneOffset.UTC),
                ZoneOffset.UTC);
        List<DynamicTest> tests = new ArrayList<>();
        int withCalls = 0;
        for (JsonNode run : cases.get("template_runs")) {
            String file = run.get("template").asText();
            Map<String, String> tokens = new LinkedHashMap<>();
            run.get("special_tokens").properties().forEach(e -> tokens.put(e.getKey(), e.getValue().asText()));
            ChatTemplate template = ChatTemplate.of(java.nio.file.Files.readString(DIR.resolve("templates/" + file)),
                    tokens).withClock(clock);
            JsonNode extras = run.path("extra");
            for (JsonNode r : expected.get(file)) {
                JsonNode extra = extras.path(r.get("extra").asInt());
                String name = r.get("conversation").asText();
                JsonNode conversation = cases.get("conversations").get(name);
                if (!extra.has("tools") || !openAiShaped(conversation)) {
                    continue;
                }
                withCalls += hasCalls(conversation) ? 1 : 0;
                boolean generation = r.get("add_generation_prompt").asBoolean();
                tests.add(dynamicTest(file + " " + name + " extra " + r.get("extra").asInt() + " gen " + generation, () -> {
                    ObjectNode body = JSON.createObjectNode();
                    body.put("model", "m");
                    body.set("messages", asClientSends(conversation));
                    ObjectNode kwargs = body.putObject("chat_template_kwargs");
                    extra.properties().forEach(e -> {
                        if (e.getKey().equals("tools")) {
                            body.set("tools", e.getValue());
                        } else {
                            kwargs.set(e.getKey(), e.getValue());
                        }
                    });
                    body.put("tool_choice", "none");
                    OpenAiRequests.Chat c = OpenAiRequests.chat(body);
                    Map<String, Object> variables = ChatCompletionsEndpoint.templateVariables(c);
                    if (r.has("error")) {
                        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                                () -> template.render(c.messages(), generation, variables));
                        assertTrue(e.getMessage().contains(r.get("error").asText()), e.getMessage());
                    } else {
                        assertEquals(r.get("text").asText(), template.render(c.messages(), generation, variables));
                    }
                }));
            }
        }
        assertTrue(tests.size() >= 40 && withCalls >= 10, tests.size() + " renders, " + withCalls + " with calls");
        return tests.stream();
    }

    /** Conversations an OpenAI client can send: string (or null) contents, and calls whose arguments are objects. */
    private static boolean openAiShaped(JsonNode conversation) {
        for (JsonNode m : conversation) {
            JsonNode c = m.get("content");
            if (c != null && !c.isNull() && !c.isTextual()) {
                return false;
            }
            for (JsonNode call : m.path("tool_calls")) {
                if (!call.path("function").path("arguments").isObject()) {
                    return false;
                }
            }
        }
        return true;
    }

    private static boolean hasCalls(JsonNode conversation) {
        for (JsonNode m : conversation) {
            if (m.has("tool_calls")) {
                return true;
            }
        }
        return false;
    }

    /** The conversation with each call's arguments as the JSON string OpenAI's API carries. */
    private static ArrayNode asClientSends(JsonNode conversation) {
        ArrayNode out = conversation.deepCopy();
        for (JsonNode m : out) {
            for (JsonNode call : m.path("tool_calls")) {
                ObjectNode f = (ObjectNode) call.get("function");
                f.put("arguments", f.get("arguments").toString());
            }
        }
        return out;
    }
}
