package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.text.HfTokenizer;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A reasoning model's guided output: free inside its {@code <think>} block, guided after it. The
 * guide's masks are checked against an oracle that reads the output as text (the reasoning
 * parser's rules: the block at the start after whitespace, the first {@code </think>} closing
 * it, the rest a value of the schema), on tiny-chat-llama's real vocabulary plus tokens that
 * carry the tags whole, split, and glued to what follows, at every step of random generations.
 */
class ReasoningGateTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SCHEMA = """
            {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "n": {"type": "integer"}},
             "required": ["answer"], "additionalProperties": false}""";
    private static final String OPEN = "<think>";
    private static final String CLOSE = "</think>";
    /** Tokens past the tokenizer's: the tags whole, in pieces, glued to JSON and to text, repeated starts. */
    private static final List<String> EXTRA = List.of(OPEN, CLOSE, "</", "think>", "</th", "ink>", "<th", " <think>",
            "</think>\n\n", "</think>{\"", "</think>oops", "</think> no", "<</", "ok</think>{", "\n\n", "<think>\n", "}</think>",
            "think>oops", "ink>x", "think>{", "ink> {", "<</th");
    private static HfTokenizer llama;
    private static GuidedVocabulary vocabulary;
    private static byte[][] tokens;

    @BeforeAll
    static void open() throws Exception {
        llama = HfTokenizer.open(GuidedFixtures.fixture("tiny-chat-llama"));
        int n = llama.vocabSize();
        tokens = new byte[n + EXTRA.size()][];
        for (int id = 0; id < n; id++) {
            tokens[id] = llama.tokenBytes(id);
        }
        for (int i = 0; i < EXTRA.size(); i++) {
            tokens[n + i] = EXTRA.get(i).getBytes(StandardCharsets.UTF_8);
        }
        vocabulary = GuidedVocabulary.of(tokens);
    }

    @AfterAll
    static void close() {
        llama.close();
    }

    private static int id(String extra) {
        return llama.vocabSize() + EXTRA.indexOf(extra);
    }

    private static JsonSchemaMatcher matcher() throws Exception {
        return JsonSchemaMatcher.compile(JSON.readTree(SCHEMA));
    }

    /** The value's state after {@code text} (a byte per char), null when no value of the schema starts so. */
    private static MatchState value(JsonSchemaMatcher m, String text) {
        MatchState s = m.start();
        for (byte b : text.getBytes(StandardCharsets.ISO_8859_1)) {
            s = s == null ? null : s.advance(b & 0xff);
        }
        return s;
    }

    /**
     * The oracle's reading of an output (a byte per char) under the gate, as the reasoning parser
     * reads text: the phase it is in, and the text the schema reads once it is guided.
     */
    private record Read(String phase, String value) {
        static Read of(boolean inside, String text) {
            String rest = text;
            if (!inside) {
                int ws = 0;
                while (ws < text.length() && text.charAt(ws) < 0x80 && Character.isWhitespace(text.charAt(ws))) {
                    ws++;
                }
                String s = text.substring(ws);
                if (ws <= 64 && s.startsWith(OPEN)) {
                    rest = s.substring(OPEN.length());
                } else if (ws <= 64 && OPEN.startsWith(s)) {
                    return new Read("before", null);
                } else {
                    return new Read("guided", text);
                }
            }
            int c = rest.indexOf(CLOSE);
            return c < 0 ? new Read("reasoning", null) : new Read("guided", rest.substring(c + CLOSE.length()));
        }
    }

    /** Whether {@code out} followed by the token's bytes may still become an answer, by the oracle. */
    private static boolean liveAfter(JsonSchemaMatcher m, boolean inside, byte[] out, byte[] token) {
        byte[] all = Arrays.copyOf(out, out.length + token.length);
        System.arraycopy(token, 0, all, out.length, token.length);
        Read r = Read.of(inside, new String(all, StandardCharsets.ISO_8859_1));
        return !r.phase().equals("guided") || value(m, r.value()) != null;
    }

    /** The ids the guide leaves allowed (finite) after masking logits of zeros. */
    private static BitSet allowed(Guide g, Set<Integer> ends) {
        float[] logits = new float[tokens.length];
        g.mask(logits, ends);
        BitSet out = new BitSet();
        for (int i = 0; i < logits.length; i++) {
            if (logits[i] != Float.NEGATIVE_INFINITY) {
                out.set(i);
            }
        }
        return out;
    }

    @Test
    void everyMaskIsWhatTheTextOracleAllowsAlongRandomGenerations() throws Exception {
        JsonSchemaMatcher m = matcher();
        Random rnd = new Random(11);
        int guidedRuns = 0;
        int openedRuns = 0;
        for (boolean inside : new boolean[] {true, false}) {
            for (int run = 0; run < 8; run++) {
                Guide g = new Guide(vocabulary, m, inside ? ReasoningGate.inside(CLOSE) : ReasoningGate.mayOpen(OPEN, CLOSE));
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                boolean sawGuided = false;
                for (int step = 0; step < 60; step++) {
                    BitSet ok = allowed(g, Set.of());
                    byte[] so = out.toByteArray();
                    // inside the block the model writes free text: tokens without bytes (special
                    // ones) are as free as in unguided text; elsewhere never allowed
                    boolean reasoning = Read.of(inside, new String(so, StandardCharsets.ISO_8859_1)).phase().equals("reasoning");
                    for (int id = 0; id < tokens.length; id++) {
                        byte[] b = tokens[id];
                        boolean expect = b == null || b.length == 0 ? reasoning : liveAfter(m, inside, so, b);
                        if (expect != ok.get(id)) {
                            throw new AssertionError((inside ? "inside" : "mayOpen") + " after \""
                                    + new String(so, StandardCharsets.UTF_8) + "\": token " + id + " \""
                                    + new String(b == null ? new byte[0] : b, StandardCharsets.UTF_8) + "\" oracle " + expect);
                        }
                    }
                    // steer: the tags and glued tokens often, else any allowed token
                    int pick;
                    List<String> favoured = step > 3 ? List.of(CLOSE, "</think>{\"", "</think>oops", "</", "think>", "ok</think>{",
                            "</think>\n\n", "</th", "<</th", "</") : List.of(OPEN, "<th", " <think>", "\n\n", "<think>\n");
                    String f = favoured.get(rnd.nextInt(favoured.size()));
                    // odd runs are not steered to open the block: they start with the value or wander
                    boolean steer = step > 3 || run % 2 == 0;
                    if (steer && rnd.nextInt(3) == 0 && ok.get(id(f))) {
                        pick = id(f);
                    } else {
                        int k = rnd.nextInt(ok.cardinality());
                        pick = ok.nextSetBit(0);
                        while (k-- > 0) {
                            pick = ok.nextSetBit(pick + 1);
                        }
                    }
                    g.advance(pick);
                    if (tokens[pick] != null) {
                        out.writeBytes(tokens[pick]);
                    }
                    sawGuided |= g.guiding();
                    if (g.finished()) {
                        break;
                    }
                }
                String text = out.toString(StandardCharsets.ISO_8859_1);
                Read r = Read.of(inside, text);
                String v = r.value();
                assertEquals(sawGuided, r.phase().equals("guided"), text);
                guidedRuns += sawGuided ? 1 : 0;
                openedRuns += !inside && text.stripLeading().startsWith(OPEN) ? 1 : 0;
                if (g.finished()) {
                    assertTrue(value(m, v).accepting(), "a finished output's value is whole: " + text);
                    JSON.readTree(v.getBytes(StandardCharsets.ISO_8859_1));
                }
            }
        }
        assertTrue(guidedRuns >= 8, "most runs reach the value: " + guidedRuns);
        assertTrue(openedRuns >= 2 && openedRuns < 8, "mayOpen runs both open the block and start with the value: " + openedRuns);
    }

    @Test
    void insideTheBlockAnEndTokenEndsTheOutputBeforeItOnlyAWholeValue() throws Exception {
        JsonSchemaMatcher m = matcher();
        Set<Integer> ends = Set.of(5);
        Guide inside = new Guide(vocabulary, m, ReasoningGate.inside(CLOSE));
        assertTrue(inside.accepting(), "reasoning may end like free text");
        assertTrue(allowed(inside, ends).get(5));
        assertFalse(inside.guiding());
        inside.advance(id("</think>\n\n"));
        assertTrue(inside.guiding());
        assertFalse(inside.accepting(), "after the block, only a whole value may end");
        assertFalse(allowed(inside, ends).get(5));
        for (byte b : "{\"answer\": \"no\"}".getBytes(StandardCharsets.UTF_8)) {
            assertTrue(allowed(inside, Set.of()).nextSetBit(0) >= 0);
            inside.advance(single(b));
        }
        assertTrue(inside.finished(), "the value is whole and cannot go on");

        Guide before = new Guide(vocabulary, m, ReasoningGate.mayOpen(OPEN, CLOSE));
        assertFalse(before.accepting(), "an empty output is not a value");
        BitSet ok = allowed(before, ends);
        assertFalse(ok.get(5));
        assertTrue(ok.get(id(OPEN)) && ok.get(id(" <think>")) && ok.get(id("<th")) && ok.get(id("\n\n")));
        assertFalse(ok.get(id(CLOSE)) || ok.get(id("</")) || ok.get(id("ok</think>{")));
        before.advance(id("<th"));
        ok = allowed(before, ends);
        assertTrue(ok.get(id("ink>")), "the tag's rest");
        assertFalse(ok.get(single((byte) '{')), "a value cannot start after '<th'");
        before.advance(id("ink>"));
        assertFalse(before.guiding(), "inside the block the model opened");
        assertTrue(before.accepting());
    }

    @Test
    void aTokenThatClosesTheBlockMustGoOnWithTheValuesBytes() throws Exception {
        Guide g = new Guide(vocabulary, matcher(), ReasoningGate.inside(CLOSE));
        BitSet ok = allowed(g, Set.of());
        assertTrue(ok.get(id(CLOSE)) && ok.get(id("</think>{\"")) && ok.get(id("</think>\n\n")) && ok.get(id("ok</think>{")));
        assertFalse(ok.get(id("</think>oops")), "'oops' starts no value");
        assertFalse(ok.get(id("</think> no")));
        assertTrue(ok.get(id("}</think>")), "'}' is reasoning; the block closes before any of the value");
        g.advance(id("<</"));
        ok = allowed(g, Set.of());
        assertTrue(ok.get(id("think>")), "'</' carried over: the tag's rest closes it");
        assertTrue(ok.get(id("</think>{\"")), "a new tag");
        g.advance(id("think>"));
        assertTrue(g.guiding());
        assertFalse(allowed(g, Set.of()).get(id("think>")));
        Guide h = new Guide(vocabulary, matcher(), ReasoningGate.inside(CLOSE));
        h.advance(id("<</th"));
        ok = allowed(h, Set.of());
        assertTrue(ok.get(id("ink> {")) && ok.get(id("ink>x")) == false && ok.get(id("think>oops")),
                "after '</th' the tag's rest must go on with a value; 'think>oops' closes nothing");
    }

    @Test
    void tagsAreCheckedAsTheGateIsBuilt() {
        assertThrows(IllegalArgumentException.class, () -> ReasoningGate.inside(""));
        assertThrows(IllegalArgumentException.class, () -> ReasoningGate.mayOpen("", CLOSE));
        assertThrows(IllegalArgumentException.class, () -> ReasoningGate.mayOpen("<".repeat(300), CLOSE));
        assertEquals("mayOpen <think> until </think>", ReasoningGate.mayOpen(OPEN, CLOSE).toString());
    }

    private static int single(byte b) {
        for (int id = 0; id < tokens.length; id++) {
            if (tokens[id] != null && tokens[id].length == 1 && tokens[id][0] == b) {
                return id;
            }
        }
        throw new AssertionError("no single-byte token " + (char) b);
    }
}
