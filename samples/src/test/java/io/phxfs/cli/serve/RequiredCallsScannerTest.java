package io.phxfs.cli.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A required tool choice's list read as it is written: split at every position and in random
 * pieces, the events add up to the calls a whole read finds, names first, arguments verbatim up
 * to their closing brace (braces, quotes and escapes inside strings are text), and a list cut
 * short keeps the calls named so far.
 */
class RequiredCallsScannerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String LIST = "[ {\"name\": \"get_weather\",\n  \"parameters\": {\"city\": \"Z\\u00fcrich {x}\","
            + " \"q\": \"a\\\"}]b\", \"n\": [1, {\"m\": {}}]}},{\"name\":\"a\\\"dd\",\"parameters\":{}} ]";

    /** The calls the events of {@code pieces} amount to: names and concatenated argument fragments. */
    private static List<RequiredCallsScanner.Call> streamed(RequiredCallsScanner s, List<String> pieces) {
        List<String> names = new ArrayList<>();
        List<StringBuilder> args = new ArrayList<>();
        for (String p : pieces) {
            for (RequiredCallsScanner.Event e : s.add(p)) {
                if (e.name() != null) {
                    assertEquals(names.size(), e.index(), "calls open in order");
                    names.add(e.name());
                    args.add(new StringBuilder());
                } else {
                    assertEquals(names.size() - 1, e.index(), "arguments belong to the last call opened");
                    args.get(e.index()).append(e.arguments());
                }
            }
        }
        List<RequiredCallsScanner.Call> out = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            out.add(new RequiredCallsScanner.Call(names.get(i), args.get(i).toString()));
        }
        return out;
    }

    @Test
    void streamedEventsAddUpToTheWholeReadWhereverTheTextIsSplit() throws Exception {
        RequiredCallsScanner whole = new RequiredCallsScanner();
        whole.add(LIST);
        assertTrue(whole.complete());
        List<RequiredCallsScanner.Call> calls = whole.calls();
        assertEquals(2, calls.size());
        assertEquals("get_weather", calls.get(0).name());
        assertEquals("a\"dd", calls.get(1).name());
        assertEquals(JSON.readTree(LIST).get(0).get("parameters"), JSON.readTree(calls.get(0).arguments()));
        assertEquals("{}", calls.get(1).arguments());
        for (int cut = 0; cut <= LIST.length(); cut++) {
            RequiredCallsScanner s = new RequiredCallsScanner();
            assertEquals(calls, streamed(s, List.of(LIST.substring(0, cut), LIST.substring(cut))), "split at " + cut);
        }
        Random rnd = new Random(4);
        for (int run = 0; run < 50; run++) {
            List<String> pieces = new ArrayList<>();
            for (int at = 0; at < LIST.length();) {
                int n = Math.min(LIST.length() - at, 1 + rnd.nextInt(4));
                pieces.add(LIST.substring(at, at + n));
                at += n;
            }
            RequiredCallsScanner s = new RequiredCallsScanner();
            assertEquals(calls, streamed(s, pieces), pieces.toString());
            assertTrue(s.complete());
        }
    }

    @Test
    void aListCutShortKeepsTheCallsNamedSoFar() {
        String cut = LIST.substring(0, LIST.indexOf("\"q\""));
        RequiredCallsScanner s = new RequiredCallsScanner();
        s.add(cut);
        assertFalse(s.complete());
        assertEquals(1, s.calls().size());
        assertEquals("get_weather", s.calls().get(0).name());
        assertTrue(s.calls().get(0).arguments().startsWith("{\"city\": \"Z\\u00fcrich {x}\","), s.calls().get(0).arguments());
        RequiredCallsScanner none = new RequiredCallsScanner();
        none.add("[ {\"name\": \"get_we");
        assertTrue(none.calls().isEmpty(), "a name not yet whole opens no call");
    }

    @Test
    void forcedChunksSendEachCallAsItIsWrittenNotAtTheEnd() throws Exception {
        ForcedToolChunks chunks = new ForcedToolChunks(new OpenAiJson.Head("chatcmpl-1", 1L, "m"), false, null);
        int at = LIST.indexOf("\"city\"");
        List<byte[]> early = chunks.text(LIST.substring(0, at + 3));
        assertEquals(2, early.size(), "the first call opens, its arguments begin");
        var open = JSON.readTree(early.get(0)).at("/choices/0/delta/tool_calls/0");
        assertEquals("get_weather", open.at("/function/name").asText());
        assertEquals("{\"ci", JSON.readTree(early.get(1)).at("/choices/0/delta/tool_calls/0/function/arguments").asText());
        List<byte[]> rest = chunks.text(LIST.substring(at + 3));
        assertEquals(3, rest.size(), "the first call's rest, the second call, its arguments");
        List<byte[]> end = chunks.last(io.phxfs.serving.engine.FinishReason.STOP);
        assertEquals("tool_calls", JSON.readTree(end.get(end.size() - 1)).at("/choices/0/finish_reason").asText());
    }
}
