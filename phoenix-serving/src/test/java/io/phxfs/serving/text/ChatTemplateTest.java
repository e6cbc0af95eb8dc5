package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** ChatTemplate on the fixtures' own templates (as transformers 5.17 rendered them), loading, and errors. */
class ChatTemplateTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<Map<String, Object>> HELLO = List.of(Map.of("role", "user", "content", "Hello!"));

    private static List<Map<String, Object>> messages(JsonNode node) {
        return JSON.convertValue(node, new TypeReference<List<Map<String, Object>>>() { });
    }

    @ParameterizedTest
    @ValueSource(strings = {TestFixtures.LLAMA, TestFixtures.GPT2})
    void rendersEveryReferenceChat(String model) throws IOException {
        JsonNode ref = TestFixtures.reference(model);
        int rendered = 0;
        int raised = 0;
        try (HfTokenizer tokenizer = HfTokenizer.open(TestFixtures.model(model))) {
            ChatTemplate template = ChatTemplate.load(TestFixtures.model(model), tokenizer.specialTokens()).orElseThrow();
            for (JsonNode c : ref.get("chats")) {
                List<Map<String, Object>> messages = messages(c.get("messages"));
                if (c.has("text")) {
                    String text = template.render(messages, true);
                    assertEquals(c.get("text").asText(), text);
                    assertArrayEquals(TestFixtures.ints(c.get("ids")), tokenizer.encode(text, false));
                    rendered++;
                } else {
                    ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> template.render(messages, true));
                    assertEquals(c.get("error").asText(), e.getMessage());
                    raised++;
                }
            }
        }
        assertTrue(rendered >= 5 && raised >= 1, rendered + " rendered, " + raised + " raised");
    }

    @Test
    void templateSources() throws IOException {
        assertTrue(ChatTemplate.load(TestFixtures.model(TestFixtures.LLAMA), Map.of()).orElseThrow().toString()
                .contains("chat_template.jinja"));
        assertTrue(ChatTemplate.load(TestFixtures.model(TestFixtures.GPT2), Map.of()).orElseThrow().toString()
                .contains("tokenizer_config.json"));
    }

    @Test
    void noTemplateIsEmpty(@TempDir Path dir) throws IOException {
        assertEquals(Optional.empty(), ChatTemplate.load(dir, Map.of()));
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"eos_token\": \"</s>\"}");
        assertEquals(Optional.empty(), ChatTemplate.load(dir, Map.of()));
    }

    @Test
    void jinjaFileWinsOverTheConfig(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": \"config\"}");
        Files.writeString(dir.resolve("chat_template.jinja"), "file\n");
        assertEquals("file", ChatTemplate.load(dir, Map.of()).orElseThrow().render(HELLO, false));
    }

    @Test
    void namedTemplatesTakeTheDefault(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": [{\"name\": \"tool_use\", \"template\":"
                + " \"tools\"}, {\"name\": \"default\", \"template\": \"{{ bos_token }}{{ messages[0].content }}\"}]}");
        assertEquals("<s>Hello!", ChatTemplate.load(dir, Map.of("bos_token", "<s>")).orElseThrow().render(HELLO, true));
    }

    /**
     * transformers' get_chat_template: with tools given (not None, an empty list too) the
     * template named "tool_use" renders, else "default"; without a default and without tools,
     * apply_chat_template raises, naming the templates there are.
     */
    @Test
    void toolsPickTheToolUseTemplate(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": [{\"name\": \"default\", \"template\":"
                + " \"plain {{ tools }}\"}, {\"name\": \"tool_use\", \"template\": \"tools {{ tools|length }}\"},"
                + " {\"name\": \"rag\", \"template\": \"rag\"}]}");
        ChatTemplate t = ChatTemplate.load(dir, Map.of()).orElseThrow();
        assertEquals(java.util.Set.of("default", "tool_use", "rag"), t.names());
        assertEquals("plain None", t.render(HELLO, true));
        assertEquals("plain None", t.render(HELLO, true, java.util.Collections.singletonMap("tools", null)));
        assertEquals("tools 1", t.render(HELLO, true, Map.of("tools", List.of(Map.of("type", "function")))));
        assertEquals("tools 0", t.render(HELLO, true, Map.of("tools", List.of())));

        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": [{\"name\": \"tool_use\", \"template\":"
                + " \"tools\"}, {\"name\": \"rag\", \"template\": \"rag\"}]}");
        ChatTemplate noDefault = ChatTemplate.load(dir, Map.of()).orElseThrow();
        assertEquals("tools", noDefault.render(HELLO, true, Map.of("tools", List.of())));
        ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> noDefault.render(HELLO, true));
        assertTrue(e.getMessage().contains("none named \"default\" (rag, tool_use)"), e.getMessage());
    }

    /** transformers 5 saves the default template as chat_template.jinja and the others as additional_chat_templates/NAME.jinja. */
    @Test
    void additionalTemplateFilesAreNamedTemplates(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": \"config\"}");
        Files.writeString(dir.resolve("chat_template.jinja"), "file {{ messages[0].content }}\n");
        Files.createDirectory(dir.resolve("additional_chat_templates"));
        Files.writeString(dir.resolve("additional_chat_templates").resolve("tool_use.jinja"), "tool file\n");
        ChatTemplate t = ChatTemplate.load(dir, Map.of()).orElseThrow();
        assertEquals("file Hello!", t.render(HELLO, false));
        assertEquals("tool file", t.render(HELLO, false, Map.of("tools", List.of())));
        Files.writeString(dir.resolve("additional_chat_templates").resolve("tool_use.jinja"), "{% if %}\n");
        ChatTemplateException bad = assertThrows(ChatTemplateException.class, () -> ChatTemplate.load(dir, Map.of()));
        assertTrue(bad.getMessage().contains("[tool_use]") && bad.getMessage().contains("line 1"), bad.getMessage());
    }

    @Test
    void malformedFieldNamesTheFileAndField(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": 42}");
        IOException e = assertThrows(IOException.class, () -> ChatTemplate.load(dir, Map.of()));
        assertTrue(e.getMessage().contains("tokenizer_config.json") && e.getMessage().contains("\"chat_template\""),
                e.getMessage());
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": []}");
        e = assertThrows(IOException.class, () -> ChatTemplate.load(dir, Map.of()));
        assertTrue(e.getMessage().contains("empty list"), e.getMessage());
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": [{\"name\": \"default\"}]}");
        e = assertThrows(IOException.class, () -> ChatTemplate.load(dir, Map.of()));
        assertTrue(e.getMessage().contains("chat_template[0]"), e.getMessage());
    }

    @Test
    void syntaxErrorsNameTheTemplateAndTheLine(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("chat_template.jinja"), "{% for m in messages %}\n{{ m.content }}\n{{ m.role + }}\n{% endfor %}\n");
        ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> ChatTemplate.load(dir, Map.of()));
        assertTrue(e.getMessage().contains(dir.resolve("chat_template.jinja").toString()), e.getMessage());
        assertTrue(e.getMessage().contains("line 3"), e.getMessage());

        e = assertThrows(ChatTemplateException.class, () -> ChatTemplate.of("a\nb\n{% if x %}\nunclosed", Map.of()));
        assertTrue(e.getMessage().contains("<template>") && e.getMessage().contains("line 3"), e.getMessage());

        e = assertThrows(ChatTemplateException.class, () -> ChatTemplate.of("{% if x %}\n{% elif (y %}\n{% endif %}", Map.of()));
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    }

    @Test
    void lineNumbersSurviveTrimmedNewlines() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> ChatTemplate.of(
                "{% if true %}\n{# a\ncomment #}\n{%- if true -%}\n\n{% endif %}\n{% endif %}\n{{ 1 + }}", Map.of()));
        assertTrue(e.getMessage().contains("line 8"), e.getMessage());
    }

    @Test
    void undefinedRendersEmptyAndItsAttributesFail() {
        ChatTemplate t = ChatTemplate.of("[{{ nothing }}][{{ messages[0].missing }}][{% if nothing %}x{% endif %}]"
                + "[{{ nothing|default('d') }}][{{ messages[5] }}]", Map.of());
        assertEquals("[][][][d][]", t.render(HELLO, false));
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{{ nothing.attr }}", Map.of()).render(HELLO, false));
        assertTrue(e.getMessage().startsWith("chat template: ") && e.getMessage().contains("'nothing' is undefined"),
                e.getMessage());
    }

    @Test
    void renderErrorsAreNamed() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{{ messages[0].content + 1 }}", Map.of()).render(HELLO, false));
        assertTrue(e.getMessage().startsWith("chat template: TypeError"), e.getMessage());
        e = assertThrows(ChatTemplateException.class, () -> ChatTemplate.of("{{ x|nosuchfilter }}", Map.of()).render(HELLO, false));
        assertTrue(e.getMessage().contains("No filter named 'nosuchfilter'"), e.getMessage());
    }

    @Test
    void raiseExceptionStopsTheRenderWithItsMessage() {
        ChatTemplate t = ChatTemplate.of("{% macro check(m) %}{% if m.role != 'user' %}{{ raise_exception('Bad role: '"
                + " + m.role) }}{% endif %}{% endmacro %}{% for m in messages %}{{ check(m) }}{% if loop.index > 1 %}"
                + "{{ raise_exception('second') }}{% endif %}{% endfor %}", Map.of());
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> t.render(List.of(Map.of("role", "tool", "content", "x")), false));
        assertEquals("Bad role: tool", e.getMessage());
        e = assertThrows(ChatTemplateException.class, () -> t.render(List.of(Map.of("role", "user", "content", "a"),
                Map.of("role", "user", "content", "b")), false));
        assertEquals("second", e.getMessage());
    }

    @Test
    void variables() {
        ChatTemplate t = ChatTemplate.of("{{ bos_token }}|{{ tools is none }}|{{ documents is defined }}|{{ add_generation_prompt }}"
                + "|{{ flag }}|{{ tools|length if tools else 0 }}", Map.of("bos_token", "<s>", "eos_token", "</s>"));
        assertEquals("<s>|True|True|True||0", t.render(HELLO, true));
        Map<String, Object> extra = new HashMap<>();
        extra.put("bos_token", "[override]");
        extra.put("flag", false);
        extra.put("tools", List.of(Map.of("type", "function")));
        assertEquals("[override]|False|True|False|False|1", t.render(HELLO, false, extra));
    }

    @Test
    void strftimeNowReadsTheClock() {
        Clock clock = Clock.fixed(LocalDateTime.parse("2025-01-02T03:04:05").toInstant(ZoneOffset.UTC), ZoneOffset.UTC);
        ChatTemplate t = ChatTemplate.of("{{ strftime_now('%d %b %Y %H:%M') }}", Map.of()).withClock(clock);
        assertEquals("02 Jan 2025 03:04", t.render(HELLO, false));
    }

    @Test
    void messageTextIsNeverTemplateSyntax() {
        ChatTemplate t = ChatTemplate.of("{{ messages[0].content }}", Map.of());
        String text = "{{ 7 * 7 }} {% if true %}x{% endif %} 'quoted' \"double\"  spaced  ";
        assertEquals(text, t.render(List.of(Map.of("role", "user", "content", text)), false));
    }

    @Test
    void javaMethodsAreNotReachable() {
        for (String expression : new String[] {"messages.append(1)", "messages[0].put('role', 'x')", "'ab'.repeat(3)",
            "messages.size()", "messages.getClass()", "messages[0].clear()"}) {
            ChatTemplateException e = assertThrows(ChatTemplateException.class,
                    () -> ChatTemplate.of("{{ " + expression + " }}", Map.of()).render(HELLO, false), expression);
            assertTrue(e.getMessage().startsWith("chat template: "), e.getMessage());
        }
        assertEquals("[]", ChatTemplate.of("[{{ 'ab'.bytes }}]", Map.of()).render(HELLO, false));
    }

    @Test
    void windowsLineEndingsReadAsJinja2ReadsThem() {
        String unix = "{% for m in messages %}\n  {{- m.content }}\n{% endfor %}\n";
        String windows = unix.replace("\n", "\r\n");
        assertEquals(ChatTemplate.of(unix, Map.of()).render(HELLO, false), ChatTemplate.of(windows, Map.of()).render(HELLO, false));
        assertEquals("Hello!\n", ChatTemplate.of(windows, Map.of()).render(HELLO, false));
    }

    @Test
    void strayEndTagsAndEmptyLoopsAreSyntaxErrors() {
        for (String source : new String[] {"a\n{% endif %}", "{% for x in %}{% endfor %}", "{% set x = %}", "{{ x"}) {
            ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> ChatTemplate.of(source, Map.of()), source);
            assertTrue(e.getMessage().startsWith("chat template <template>: line "), e.getMessage());
        }
    }

    @Test
    void concurrentRenders() throws Exception {
        ChatTemplate t = ChatTemplate.of(
                "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.content }}{% endfor %}{{ ns.n }}",
                Map.of());
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                int n = i % 7 + 1;
                results.add(pool.submit(() -> {
                    List<Map<String, Object>> messages = new ArrayList<>();
                    StringBuilder expected = new StringBuilder();
                    for (int k = 0; k < n; k++) {
                        messages.add(Map.of("role", "user", "content", "m" + k));
                        expected.append("m").append(k);
                    }
                    return t.render(messages, false).equals(expected.toString() + n);
                }));
            }
            for (Future<Boolean> f : results) {
                assertTrue(f.get());
            }
        } finally {
            pool.shutdown();
        }
    }
}
