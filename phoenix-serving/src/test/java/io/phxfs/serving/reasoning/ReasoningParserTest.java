package io.phxfs.serving.reasoning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.serving.guided.Guide;
import io.phxfs.serving.guided.GuidedVocabulary;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.ReasoningGate;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The qwen3 and deepseek_r1 parsers on whole outputs, and the same outputs streamed split at
 * every position (so each tag is split at each of its characters) and in random small pieces:
 * a stream never lets a tag (or part of one) out, and comes to exactly the whole parse.
 */
class ReasoningParserTest {
    private static final ReasoningParser QWEN3 = new Qwen3ReasoningParser();
    private static final ReasoningParser R1 = new DeepSeekR1ReasoningParser();
    /** qwen3 after a prompt that ends with {@code <think>} (the thinking models' templates). */
    private static final ReasoningParser QWEN3_OPENED = new ReasoningParser() {
        @Override
        public String name() {
            return "qwen3 after an opened prompt";
        }

        @Override
        public ReasoningStream open(boolean thinking) {
            return QWEN3.open(thinking, true);
        }
    };

    @Test
    void qwen3AfterAPromptThatOpenedTheBlockReasonsUpToTheEndTag() {
        check(QWEN3_OPENED, true, "Let me think.\n</think>\n\nThe answer is 4.", "Let me think.\n", "\n\nThe answer is 4.");
        check(QWEN3_OPENED, true, "<think>again</think>x", "again", "x");
        check(QWEN3_OPENED, true, "cut off mid-thought", "cut off mid-thought", null);
        assertEquals(new ReasoningOutput(null, "plain"), QWEN3.parse("plain", true, false));
        assertTrue(ReasoningParser.promptOpens("<|im_start|>assistant\n<think>\n"));
        assertFalse(ReasoningParser.promptOpens("<|im_start|>assistant\n<think>\n\n</think>\n\n"), "enable_thinking false's empty block");
        assertFalse(ReasoningParser.promptOpens("<|im_start|>assistant\n"));
    }

    /** Asserts the whole parse, then that every streamed split of the text amounts to it. */
    private static void check(ReasoningParser p, boolean thinking, String text, String reasoning, String content) {
        ReasoningOutput whole = p.parse(text, thinking);
        assertEquals(new ReasoningOutput(reasoning, content), whole, p.name() + " of " + text);
        for (int i = 0; i <= text.length(); i++) {
            for (int j = i; j <= text.length(); j++) {
                streamed(p, thinking, text, List.of(text.substring(0, i), text.substring(i, j), text.substring(j)), whole);
            }
        }
        Random r = new Random(text.hashCode());
        for (int round = 0; round < 50; round++) {
            List<String> pieces = new ArrayList<>();
            for (int at = 0; at < text.length();) {
                int end = Math.min(text.length(), at + 1 + r.nextInt(4));
                if (end < text.length() && Character.isHighSurrogate(text.charAt(end - 1))) {
                    end++;
                }
                pieces.add(text.substring(at, end));
                at = end;
            }
            streamed(p, thinking, text, pieces, whole);
        }
    }

    private static void streamed(ReasoningParser p, boolean thinking, String text, List<String> pieces,
                                 ReasoningOutput whole) {
        ReasoningStream s = p.open(thinking);
        StringBuilder reasoning = new StringBuilder();
        StringBuilder content = new StringBuilder();
        List<ReasoningDelta> deltas = new ArrayList<>();
        for (String piece : pieces) {
            deltas.add(s.add(piece));
        }
        deltas.add(s.finish());
        boolean contentBegan = false;
        for (ReasoningDelta d : deltas) {
            // reasoning pieces, then content pieces; never a tag
            assertFalse(contentBegan && !d.reasoning().isEmpty(), "reasoning after content: " + pieces);
            contentBegan |= !d.content().isEmpty();
            reasoning.append(d.reasoning());
            content.append(d.content());
        }
        String what = p.name() + " streamed " + pieces;
        assertEquals(whole.reasoning() == null ? "" : whole.reasoning(), reasoning.toString(), what);
        assertEquals(whole.content() == null ? "" : whole.content(), content.toString(), what);
        assertEquals(whole.reasoning() != null, s.reasoned(), what);
    }

    @Test
    void qwen3SplitsAnExplicitBlock() {
        check(QWEN3, true, "<think>\nLet me add: 2+2=4.\n</think>\n\nThe answer is 4.",
                "\nLet me add: 2+2=4.\n", "\n\nThe answer is 4.");
        check(QWEN3, true, "<think>x</think>", "x", null);
    }

    @Test
    void qwen3EmptyReasoning() {
        check(QWEN3, true, "<think>\n\n</think>\n\nHi!", "\n\n", "\n\nHi!");
        check(QWEN3, true, "<think></think>Hi", "", "Hi");
    }

    @Test
    void qwen3WithoutABlockIsAllContent() {
        check(QWEN3, true, "Just an answer, 1 < 2 and </thin is no tag.", null,
                "Just an answer, 1 < 2 and </thin is no tag.");
        check(QWEN3, true, "ends with <thi", null, "ends with <thi");
        check(QWEN3, true, "", null, "");
    }

    @Test
    void qwen3WithThinkingOffIsAllContentEvenWithTags() {
        check(QWEN3, false, "<think>a</think>b", null, "<think>a</think>b");
    }

    @Test
    void qwen3CutOffInsideTheBlockIsAllReasoning() {
        check(QWEN3, true, "<think>still thinking </thi", "still thinking </thi", null);
    }

    @Test
    void qwen3OpensTheBlockOnlyAtTheStart() {
        check(QWEN3, true, "A<think>r</think>B", null, "A<think>r</think>B");
        check(QWEN3, true, "\n <think>r</think>B", "r", "B");
        check(QWEN3, true, "\n <thi", null, "\n <thi");
    }

    @Test
    void onlyOneBlock() {
        check(QWEN3, true, "<think>r</think>B <think>c</think>", "r", "B <think>c</think>");
        check(R1, true, "r</think>B</think>", "r", "B</think>");
    }

    @Test
    void deepseekR1EverythingBeforeTheEndTagIsReasoning() {
        check(R1, true, "Okay, 2+2 is 4.\n</think>\n\n**4**", "Okay, 2+2 is 4.\n", "\n\n**4**");
        check(R1, true, "<think>\nhmm</think>ok", "\nhmm", "ok");
        check(R1, true, "\n<think>hmm</think>ok", "hmm", "ok");
        check(R1, true, "hmm <think></think>ok", "hmm <think>", "ok");
        check(R1, false, "r</think>c", "r", "c");
    }

    @Test
    void deepseekR1WithoutTheEndTagIsAllReasoning() {
        check(R1, true, "I am still thinking <th", "I am still thinking <th", null);
        check(R1, true, "<thin", "<thin", null);
        check(R1, true, "", "", null);
    }

    @Test
    void deepseekR1EmptyReasoningAndNoContent() {
        check(R1, true, "</think>answer", "", "answer");
        check(R1, true, "<think></think>", "", null);
    }

    @Test
    void unicodeAroundTheTags() {
        check(QWEN3, true, "<think>Zürich 🌧️ 東京</think>𝄞 ünïcode 😀", "Zürich 🌧️ 東京", "𝄞 ünïcode 😀");
        check(R1, true, "🤔 <thi🙂nk></think>答え", "🤔 <thi🙂nk>", "答え");
    }

    @Test
    void aFinishedStreamTakesNoMore() {
        ReasoningStream s = QWEN3.open(true);
        s.finish();
        assertThrows(IllegalStateException.class, () -> s.add("x"));
        assertTrue(s.finish().isEmpty());
    }

    @Test
    void theNames() {
        assertEquals(List.of("deepseek_r1", "qwen3"), ReasoningParsers.names());
        assertEquals("qwen3", ReasoningParsers.byName("qwen3").name());
        assertEquals("deepseek_r1", ReasoningParsers.byName("deepseek_r1").name());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ReasoningParsers.byName("granite"));
        assertEquals("unknown reasoning parser \"granite\"; this server has deepseek_r1, qwen3", e.getMessage());
    }

    /** Whether a guide gated as {@code stream} says is guiding after {@code text}, read a byte a token. */
    private static boolean guidedAfter(ReasoningStream stream, String text) {
        byte[][] bytes = new byte[256][];
        for (int b = 0; b < 256; b++) {
            bytes[b] = new byte[] {(byte) b};
        }
        ReasoningGate gate = stream.guideGate();
        Guide g = new Guide(GuidedVocabulary.of(bytes), JsonSchemaMatcher.anyObject(), gate);
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            g.advance(b & 0xff);
        }
        return g.guiding();
    }

    @Test
    void aGuidedOutputIsGuidedWhereTheParserReadsContent() {
        // thinking off: no block is looked for, the output is guided from its start
        assertEquals(null, QWEN3.open(false).guideGate());
        assertTrue(guidedAfter(QWEN3.open(false), ""));
        // qwen3: a block at the start (after whitespace), or content from the first byte
        assertEquals("mayOpen <think> until </think>", QWEN3.open(true).guideGate().toString());
        assertFalse(guidedAfter(QWEN3.open(true), " \n<thi"));
        assertFalse(guidedAfter(QWEN3.open(true), "<think>{\"a\": 1} still thinking"));
        assertTrue(guidedAfter(QWEN3.open(true), "<think>x</think>"));
        assertTrue(guidedAfter(QWEN3.open(true), " {"));
        // after a prompt that opened the block, and deepseek_r1 always: reasoning up to </think>
        assertEquals("inside until </think>", QWEN3.open(true, true).guideGate().toString());
        assertFalse(guidedAfter(QWEN3.open(true, true), "{\"a\": 1}"));
        assertTrue(guidedAfter(QWEN3.open(true, true), "hm </think>"));
        assertEquals("inside until </think>", R1.open(false).guideGate().toString());
        assertFalse(guidedAfter(R1.open(true), "<think>x</thin"));
        assertTrue(guidedAfter(R1.open(true), "<think>x</think>\n\n{"));
        // the parser agrees: the content is what the guide reads
        for (String out : List.of("<think>x</think>\n{\"a\": 1}", " {\"a\": 1}")) {
            ReasoningOutput o = QWEN3.parse(out, true);
            assertTrue(o.content().strip().startsWith("{"), out);
        }
    }
}
