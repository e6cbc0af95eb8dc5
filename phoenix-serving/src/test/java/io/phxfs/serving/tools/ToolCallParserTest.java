package io.phxfs.serving.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The parsers on outputs in the formats the models document (Qwen2.5's and Hermes' tool_call
 * blocks, Llama 3.1's JSON, Mistral's [TOOL_CALLS] list): the calls and content of whole
 * outputs, and the same outputs streamed in random small pieces, which must come to exactly
 * the same content and calls.
 */
class ToolCallParserTest {
    private static final ToolCallParser HERMES = new HermesToolParser();
    private static final ToolCallParser LLAMA = new Llama3JsonToolParser();
    private static final ToolCallParser MISTRAL = new MistralToolParser();

    /** A call without its (random) id. */
    record Fn(String name, String arguments) {
    }

    private static List<Fn> fns(List<ToolCall> calls) {
        return calls.stream().map(c -> new Fn(c.name(), c.arguments())).toList();
    }

    private static void whole(ToolCallParser p, String text, String content, Fn... calls) {
        ParsedOutput o = p.parse(text);
        assertEquals(List.of(calls), fns(o.calls()), p.name() + " calls of " + text);
        assertEquals(content, o.content(), p.name() + " content of " + text);
    }

    // --- hermes (Qwen2.5, Hermes 2 Pro / 3) ---

    @Test
    void hermesQwenStyleCallWithNewlines() {
        whole(HERMES, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n"
                + "</tool_call>", null, new Fn("get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}"));
    }

    @Test
    void hermesSeveralCallsAndTheTextAroundThem() {
        String text = "Let me look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                + "</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>\nOne moment.";
        whole(HERMES, text, "Let me look that up.\n\n\nOne moment.",
                new Fn("get_weather", "{\"city\": \"Paris\"}"), new Fn("add", "{\"a\": 2, \"b\": 3}"));
        // only whitespace outside the calls: content null, as OpenAI's
        whole(HERMES, "\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"b\"}</tool_call>\n",
                null, new Fn("a", "{}"), new Fn("b", "{}"));
    }

    @Test
    void hermesArgumentsAreWrittenAsVllmDumpsThem() {
        // compact JSON, nested objects and lists, null, booleans, numbers, unicode kept as is
        whole(HERMES, "<tool_call>{\"name\":\"search\",\"arguments\":{\"q\":\"Zürich 東京 🌍 \\\"quoted\\\"\\n\","
                        + "\"filter\":{\"range\":{\"min\":1,\"max\":[2.5,3]},\"tags\":[]},\"exact\":true,\"page\":null}}</tool_call>",
                null, new Fn("search", "{\"q\": \"Zürich 東京 🌍 \\\"quoted\\\"\\n\", \"filter\": {\"range\": {\"min\": 1,"
                        + " \"max\": [2.5, 3]}, \"tags\": []}, \"exact\": true, \"page\": null}"));
        // arguments given as a JSON string holding the object
        whole(HERMES, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>", null,
                new Fn("f", "{\"x\": 1}"));
    }

    @Test
    void hermesMalformedCallsStayContent() {
        String bad = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
        whole(HERMES, bad, bad);
        String noName = "<tool_call>{\"arguments\": {\"a\": 1}}</tool_call>";
        whole(HERMES, noName, noName);
        String notObject = "<tool_call>[1, 2]</tool_call>";
        whole(HERMES, notObject, notObject);
        String argsList = "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>";
        whole(HERMES, argsList, argsList);
        // a valid call beside a broken one: the call, and the broken block verbatim as content
        whole(HERMES, "<tool_call>{\"name\": \"ok\", \"arguments\": {}}</tool_call>" + bad, bad, new Fn("ok", "{}"));
    }

    @Test
    void hermesUnclosedBlockAtTheEnd() {
        whole(HERMES, "Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n", "Sure.",
                new Fn("f", "{\"a\": 1}"));
        // cut off by max_tokens mid-JSON: not a call
        whole(HERMES, "Sure.<tool_call>\n{\"name\": \"f\", \"argu", "Sure.<tool_call>\n{\"name\": \"f\", \"argu");
    }

    @Test
    void hermesTextWithoutCallsIsUnchanged() {
        for (String t : List.of("Hello, world!", "a <tool> b </tool_call> c", "ends with <tool_c", "  ", "",
                "{\"name\": \"f\", \"arguments\": {}}")) {
            whole(HERMES, t, t);
        }
    }

    @Test
    void idsAreOpenAisShapeAndMistralsNineCharacters() {
        ParsedOutput h = HERMES.parse("<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>");
        assertEquals(2, h.calls().size());
        for (ToolCall c : h.calls()) {
            assertTrue(c.id().matches("call_[A-Za-z0-9]{24}"), c.id());
        }
        assertTrue(!h.calls().get(0).id().equals(h.calls().get(1).id()), "distinct ids");
        ParsedOutput m = MISTRAL.parse("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}]");
        assertTrue(m.calls().get(0).id().matches("[A-Za-z0-9]{9}"), m.calls().get(0).id());
    }

    // --- llama3_json (Llama 3.1 / 3.2 / 3.3) ---

    @Test
    void llamaJsonCalls() {
        whole(LLAMA, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco, CA\", \"unit\": \"fahrenheit\"}}",
                null, new Fn("get_weather", "{\"city\": \"San Francisco, CA\", \"unit\": \"fahrenheit\"}"));
        whole(LLAMA, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", null,
                new Fn("get_weather", "{\"city\": \"Paris\"}"));
        whole(LLAMA, "\n{\"name\": \"a\", \"arguments\": {\"x\": {\"y\": [1, {\"z\": \"ü\"}]}}}; {\"name\": \"b\", \"parameters\": {}}\n",
                null, new Fn("a", "{\"x\": {\"y\": [1, {\"z\": \"ü\"}]}}"), new Fn("b", "{}"));
        // both fields: arguments wins, as vLLM's parser reads obj.get("arguments", obj.get("parameters"))
        whole(LLAMA, "{\"name\": \"f\", \"parameters\": {\"p\": 1}, \"arguments\": {\"a\": 2}}", null,
                new Fn("f", "{\"a\": 2}"));
    }

    @Test
    void llamaOutputsThatAreNotWhollyCallsAreContent() {
        for (String t : List.of("The weather is nice.", "{\"name\": \"f\", \"parameters\": {}} is how you call it.",
                "{\"name\": \"f\", \"parameters\": {\"a\": }}", "{\"city\": \"Paris\"}", "{\"name\": \"a\"};",
                "<|python_tag|>print(1)", "<|python_t", "{", "")) {
            whole(LLAMA, t, t);
        }
    }

    // --- mistral (Mistral 7B Instruct v0.3 and later) ---

    @Test
    void mistralCallLists() {
        whole(MISTRAL, "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                        + "{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}]", null,
                new Fn("get_weather", "{\"city\": \"Paris\"}"), new Fn("add", "{\"a\": 2, \"b\": 3}"));
        whole(MISTRAL, "I will check. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": \"naïve\"}}]", "I will check. ",
                new Fn("f", "{\"q\": \"naïve\"}"));
        // tokenizer v11: name[ARGS]{...} after each marker
        whole(MISTRAL, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]add[ARGS]{\"a\": 1}", null,
                new Fn("get_weather", "{\"city\": \"Paris\"}"), new Fn("add", "{\"a\": 1}"));
    }

    @Test
    void mistralMalformedCallsStayContent() {
        for (String t : List.of("[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": 1}", "[TOOL_CALLS] not json",
                "[TOOL_CALLS] [{\"name\": \"f\"}] and more text", "[TOOL_CALLS][]", "no calls [TOOL", "plain")) {
            whole(MISTRAL, t, t);
        }
    }

    // --- streaming ---

    static Stream<Arguments> outputs() {
        List<Arguments> out = new ArrayList<>();
        String[] hermes = {
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
            "Let me look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich 東京 🌍\"}}\n"
                    + "</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": {\"c\": [3]}}}\n</tool_call>\nDone.",
            "<tool_call>{\"name\": \"ok\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"bad\", \"arguments\": {</tool_call> tail",
            "\n\n<tool_call>{\"name\": \"a\"}</tool_call>\n\n",
            "Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n",
            "a <tool> b <tool_call c </tool_call> <tool_cal", "   ", "Just text, no calls at all.",
        };
        String[] llama = {
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": [1, 2]}}; {\"name\": \"b\", \"parameters\": {}}",
            "{\"name\": \"f\", \"parameters\": {}} is how you call it.", "The weather is nice.", "  <|python_t",
            "\n{\"name\": \"f\", \"parameters\": {\"s\": \"東京\"}}\n",
        };
        String[] mistral = {
            "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"add\", \"arguments\": {\"a\": 2}}]",
            "I will check. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": \"naïve\"}}]",
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]add[ARGS]{\"a\": 1}",
            "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": 1}", "text [TOOL_ then more",
        };
        for (String t : hermes) {
            out.add(Arguments.of(HERMES, t));
        }
        for (String t : llama) {
            out.add(Arguments.of(LLAMA, t));
        }
        for (String t : mistral) {
            out.add(Arguments.of(MISTRAL, t));
        }
        return out.stream();
    }

    @ParameterizedTest
    @MethodSource("outputs")
    void streamedInRandomPiecesEqualsWhole(ToolCallParser p, String text) {
        ParsedOutput whole = p.parse(text);
        Random r = new Random(text.hashCode());
        for (int trial = 0; trial < 50; trial++) {
            ToolCallStream s = p.open();
            List<ToolCallDelta> deltas = new ArrayList<>();
            int i = 0;
            while (i < text.length()) {
                int n = Math.min(text.length() - i, 1 + r.nextInt(trial % 2 == 0 ? 3 : 12));
                // never split a surrogate pair: the detokenizer releases whole characters
                if (Character.isHighSurrogate(text.charAt(i + n - 1)) && i + n < text.length()) {
                    n++;
                }
                deltas.addAll(s.add(text.substring(i, i + n)));
                i += n;
            }
            deltas.addAll(s.finish());
            StringBuilder content = new StringBuilder();
            List<ToolCall> calls = new ArrayList<>();
            int index = 0;
            for (ToolCallDelta d : deltas) {
                switch (d) {
                    case ToolCallDelta.Content c -> {
                        assertTrue(!c.text().isEmpty(), "no empty content deltas");
                        content.append(c.text());
                    }
                    case ToolCallDelta.Call c -> {
                        assertEquals(index++, c.index(), "calls are numbered in order");
                        calls.add(c.call());
                    }
                }
            }
            assertEquals(fns(whole.calls()), fns(calls), p.name() + " streamed calls of " + text);
            assertEquals(whole.content() == null ? "" : whole.content(), content.toString(),
                    p.name() + " streamed content of " + text);
        }
    }

    @Test
    void contentIsReleasedAsSoonAsItCannotBeginACall() {
        ToolCallStream s = HERMES.open();
        assertEquals(List.of(new ToolCallDelta.Content("Hello ")), s.add("Hello <tool"));
        assertEquals(List.of(new ToolCallDelta.Content("<tools> are")), s.add("s> are"));
        // content was released, so its whitespace goes out too
        assertEquals(List.of(new ToolCallDelta.Content(" ")), s.add(" <tool_call>{\"name\": \"f\", "));
        List<ToolCallDelta> d = s.add("\"arguments\": {}}</tool_call>");
        assertEquals(1, d.size());
        assertEquals(new Fn("f", "{}"), fns(List.of(((ToolCallDelta.Call) d.get(0)).call())).get(0));
        assertEquals(List.of(), s.finish());

        ToolCallStream l = LLAMA.open();
        assertEquals(List.of(), l.add("  "));
        assertEquals(List.of(new ToolCallDelta.Content("  The answer")), l.add("The answer"));

        ToolCallStream m = MISTRAL.open();
        assertEquals(List.of(new ToolCallDelta.Content("ok ")), m.add("ok [TOOL_"));
    }

    @Test
    void unknownParserNamesAreRefusedNamingTheKnownOnes() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> ToolParsers.byName("pythonic"));
        assertEquals("unknown tool call parser \"pythonic\"; this server has hermes, llama3_json, mistral", e.getMessage());
        for (String n : ToolParsers.names()) {
            assertEquals(n, ToolParsers.byName(n).name());
        }
    }
}
