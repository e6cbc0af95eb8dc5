package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.reasoning.Qwen3ReasoningParser;
import io.phxfs.serving.reasoning.ReasoningDelta;
import io.phxfs.serving.reasoning.ReasoningStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Edge cases of the reasoning gate and the regular languages, each found by a review and seen failing on 7f64370. */
class GuidedEdgeCasesTest {
    private static boolean matches(ByteLanguage l, String s) {
        return RegexParserTest.byteMatch(l, s);
    }

    private static ByteLanguage re(String p) {
        return ByteLanguage.of(RegexParser.parse(p), "re");
    }

    // ---- (c) negated shorthand classes: wider than ECMA-262 and/or Python ----

    /** ECMA-262's \s holds U+00A0, U+2003, U+3000, U+FEFF...; so does Python's: \S must not match them. */
    @Test
    void nonSpaceClassMatchesNoBreakSpace() {
        assertFalse(matches(re("\\S+"), "a\u00A0b"), "\\S matched U+00A0, which ECMA-262 and Python both read as \\s");
    }

    @Test
    void negatedSpaceClassMatchesIdeographicSpace() {
        assertFalse(matches(re("[^\\s]+"), "a\u3000b"), "[^\\s] matched U+3000, which ECMA-262 and Python both read as \\s");
    }

    /** The commonest "non-blank" schema pattern lets a string of no-break spaces through. */
    @Test
    void schemaPatternNonBlankAcceptsNoBreakSpace() throws Exception {
        JsonSchemaMatcher m = JsonSchemaMatcher.compile(new ObjectMapper().readTree(
                "{\"type\": \"string\", \"pattern\": \"^\\\\S+$\"}"));
        MatchState s = m.start();
        for (byte b : "\"\u00A0\"".getBytes(StandardCharsets.UTF_8)) {
            s = s == null ? null : s.advance(b & 0xff);
        }
        assertTrue(s == null || !s.accepting(), "\"\\u00a0\" accepted for pattern ^\\S+$ (ECMA /^\\S+$/.test('\\u00a0') is false)");
    }

    /** Python's \D (str pattern) is not-a-Unicode-digit: U+0663 ARABIC-INDIC DIGIT THREE is not \D there. */
    @Test
    void nonDigitClassMatchesUnicodeDigitPythonRejects() {
        assertFalse(matches(re("\\D"), "\u0663"), "\\D matched U+0663, which Python's re.fullmatch(r'\\D', '\\u0663') refuses");
    }

    /** Python's \W (str pattern) is not-a-Unicode-word-char: 'é' is \w there. */
    @Test
    void nonWordClassMatchesLetterPythonRejects() {
        assertFalse(matches(re("\\W"), "\u00E9"), "\\W matched 'é', which Python's re.fullmatch(r'\\W', 'é') refuses");
    }

    // ---- (c) constructs both syntaxes reject, read here as something ----

    @Test
    void braceQuantifierWithNothingToRepeat() {
        // Python: "nothing to repeat"; ECMA-262 (Annex B too): InvalidBracedQuantifier is a SyntaxError
        assertThrows(UnsupportedPatternException.class, () -> RegexParser.parse("{2}"));
    }

    @Test
    void doubleQuantifier() {
        // Python: "multiple repeat"; ECMA-262: SyntaxError (nothing to repeat)
        assertThrows(UnsupportedPatternException.class, () -> RegexParser.parse("a**"));
    }

    @Test
    void unicodeBraceEscape() {
        // Python: "bad escape backslash-u"; ECMA-262 without the u flag: 'u' repeated 41 times; with it: 'A'
        assertThrows(UnsupportedPatternException.class, () -> RegexParser.parse("\\u{41}"));
    }

    // ---- (b) the gate against ReasoningStream ----

    private static int idOf(List<String> vocab, String t) {
        return vocab.indexOf(t);
    }

    /**
     * Only ASCII whitespace may come before {@code <think>}, for the stream (characters) and the
     * gate (bytes) alike: after U+3000 the tag is text, and the guide guides it as the content it is.
     */
    @Test
    void whitespaceBeforeThinkIsReadAlikeByTheStreamAndTheGate() {
        List<String> vocab = List.of("\u3000", "<think>", "a", "</think>", "b", " ");
        byte[][] bytes = vocab.stream().map(s -> s.getBytes(StandardCharsets.UTF_8)).toArray(byte[][]::new);
        GuidedVocabulary v = GuidedVocabulary.of(bytes);
        for (List<String> out : List.of(List.of("\u3000", "<think>", "a"), List.of(" ", "<think>", "a", "</think>", "b"))) {
            ReasoningStream stream = new Qwen3ReasoningParser().open(true);
            Guide guide = new Guide(v, TextGrammar.regex(".*"), stream.guideGate());
            StringBuilder content = new StringBuilder();
            for (String t : out) {
                float[] logits = new float[vocab.size()];
                guide.mask(logits, Set.of());
                assertTrue(logits[idOf(vocab, t)] != Float.NEGATIVE_INFINITY, t + " masked");
                guide.advance(idOf(vocab, t));
                content.append(stream.add(t).content());
            }
            content.append(stream.finish().content());
            assertEquals(!stream.reasoned() || out.contains("</think>"), guide.guiding(), out + ": guided where the stream reads content");
            assertEquals(out.get(0).equals(" ") ? "b" : String.join("", out), content.toString(), out.toString());
        }
    }

    /** Before the block, a token that completes <think> is taken whole, even where it goes on past </think> into bytes no value starts with. */
    @Test
    void beforeBlockTokenThroughBothTagsIsNotChecked() throws Exception {
        List<String> vocab = List.of("{", "}", "<think></think>oops", "<think>", "</think>");
        byte[][] bytes = vocab.stream().map(s -> s.getBytes(StandardCharsets.UTF_8)).toArray(byte[][]::new);
        GuidedVocabulary v = GuidedVocabulary.of(bytes);
        ReasoningStream stream = new Qwen3ReasoningParser().open(true);
        Guide guide = new Guide(v, JsonSchemaMatcher.anyObject(), stream.guideGate());
        float[] logits = new float[vocab.size()];
        guide.mask(logits, Set.of());
        assertEquals(Float.NEGATIVE_INFINITY, logits[2],
                "\"<think></think>oops\" allowed: its content \"oops\" is no JSON object (REASONING's closings are checked, BEFORE's not)");
    }

    // ---- (a) a lone surrogate in a choice (or a pattern's literal) forces bytes that are no UTF-8 ----

    /** {"guided_choice": ["x\\ud800"]} parses in Jackson; the guide then forces 78 ED A0 80 (CESU-8), which decodes to U+FFFD. */
    @Test
    void loneSurrogateChoiceIsRefusedNotForcedAsInvalidUtf8() {
        String lone = new String(new char[] {'x', (char) 0xD800});
        assertThrows(IllegalArgumentException.class, () -> TextGrammar.choice(List.of(lone)),
                "a choice no UTF-8 text can be is accepted; its only output is the invalid bytes 78 ED A0 80");
    }
}
