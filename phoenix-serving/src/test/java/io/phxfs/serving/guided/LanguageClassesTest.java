package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.serving.text.HfTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@link ByteLanguage#representatives} against an enumeration of every string up to the depth, and
 * {@link GuidedVocabulary#cacheKey} against the brute force: the key state allows exactly what the
 * exact state allows, and recurs where the exact one does not.
 */
class LanguageClassesTest {
    private static final String NOTE = "^[A-Za-z ,.;']{0,200}$";

    private static ByteLanguage re(String p) {
        return ByteLanguage.of(RegexParser.parse(p), p);
    }

    /** Per state, the states it reaches on each symbol interval's first byte (one byte stands for its interval). */
    private static int[] symbols(ByteLanguage l) {
        boolean[] read = l.readableBytes();
        List<Integer> out = new ArrayList<>();
        int last = -2;
        for (int b = 0; b < 256; b++) {
            // one representative per run of readable bytes whose successors agree in every state
            if (read[b] && (last < 0 || !sameColumn(l, last, b))) {
                out.add(b);
                last = b;
            }
        }
        out.add(-1); // stands for every byte no state reads
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    private static boolean sameColumn(ByteLanguage l, int a, int b) {
        for (int s = 0; s < l.size(); s++) {
            if (l.step(s, a) != l.step(s, b)) {
                return false;
            }
        }
        return true;
    }

    /** What {@code from} does with every string of at most {@code depth} symbols, written out. */
    private static String behaviour(ByteLanguage l, int[] symbols, int from, int depth) {
        StringBuilder out = new StringBuilder();
        walk(l, symbols, from, depth, out);
        return out.toString();
    }

    private static void walk(ByteLanguage l, int[] symbols, int state, int depth, StringBuilder out) {
        out.append(l.accepts(state) ? 'A' : 'r');
        if (depth == 0) {
            return;
        }
        for (int b : symbols) {
            int next = b < 0 ? -1 : l.step(state, b);
            if (next < 0) {
                out.append('-');
            } else {
                out.append('(');
                walk(l, symbols, next, depth - 1, out);
                out.append(')');
            }
        }
    }

    @Test
    void statesShareARepresentativeExactlyWhenNoStringUpToTheDepthTellsThemApart() {
        String[] patterns = {"[a-z]{0,12}", "[a-z]{3,9}x?", "(ab|ac){2,5}", "\\d{1,4}(\\.\\d{1,3})?", "(é|e)[a-z]{0,6}",
            "[a-c]*d[a-c]{0,3}", "x(yz){0,4}|w{2,6}", "😀{1,3}a"};
        for (String p : patterns) {
            ByteLanguage l = re(p);
            int n = l.size();
            int[] symbols = symbols(l);
            for (int depth = 0; depth <= 4; depth++) {
                int[] reps = l.representatives(depth);
                assertNotNull(reps, p);
                assertEquals(n, reps.length, p);
                for (int s = 0; s < n; s++) {
                    assertTrue(reps[s] <= s && reps[reps[s]] == reps[s], p + ": the least state of its class, " + s);
                    for (int t = 0; t < s; t++) {
                        boolean alike = behaviour(l, symbols, s, depth).equals(behaviour(l, symbols, t, depth));
                        assertEquals(alike, reps[s] == reps[t], p + " depth " + depth + ": states " + t + " and " + s);
                    }
                }
            }
        }
    }

    /** One state, accepting (a class numbered 1 once overran an array of one). */
    @Test
    void aLanguageOfOneStateIsOneClass() {
        byte[][] tokens = GuidedVocabularyTest.trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        assertEquals(1, ((TextFrame) TextGrammar.regex("[a-z]*").start().onlyHead()).language().size());
        for (MatchState s : List.of(TextGrammar.regex("[a-z]*").start(), TextGrammar.regex(".*").start(),
                JsonSchemaMatcherTest.schema("{\"type\":\"string\",\"pattern\":\"^[a-z]*$\"}").start().advance('"'))) {
            for (int depth : new int[] {0, 1, 7}) {
                ByteLanguage l = s.onlyHead() instanceof TextFrame t ? t.language() : ((PatternFrame) s.onlyHead()).language();
                assertEquals(0, l.representatives(depth)[0]);
            }
            assertEquals(GuidedVocabularyTest.bruteForce(tokens, s), v.allowed(v.cacheKey(s)).toBitSet(), s.toString());
        }
    }

    @Test
    void aBoundedRepetitionIsOneClassButForItsLastDepthStates() {
        ByteLanguage l = re("[a-z]{0,50}");
        int[] reps = l.representatives(5);
        Set<Integer> classes = new HashSet<>();
        for (int r : reps) {
            classes.add(r);
        }
        // positions 0..45 read every string of 5 letters; 46..50 each stop at their own length
        assertEquals(6, classes.size());
        assertTrue(reps == l.representatives(5), "kept for the same depth");
        assertEquals(51, l.representatives(60).length);
    }

    @Test
    void refiningPastTheWorkLimitLeavesEveryStateAlone() {
        // 1,000 x 1,000 x 20 words: well past the limit
        ByteLanguage l = re("(\\d{1,999}|[a-z]{1,999})");
        assertNull(l.representatives(10_000));
        GuidedVocabulary v = GuidedVocabulary.of(GuidedVocabularyTest.trickyVocabulary());
        MatchState s = TextGrammar.regex("(\\d{1,999}|[a-z]{1,999})").start().advance('a');
        assertTrue(v.walkDepth(((TextFrame) s.onlyHead()).language()) < 10_000);
    }

    @Test
    void theKeyStateAllowsWhatTheExactStateAllowsAndRecurs() {
        byte[][] tokens = GuidedVocabularyTest.trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        String note = "\"" + "The red kind, it said; then: ok. ".repeat(7).replace(":", "").substring(0, 200) + "\"";
        Object[][] cases = {
            {JsonSchemaMatcherTest.schema("{\"type\":\"string\",\"pattern\":\"" + NOTE + "\"}").start(), note, 40},
            {JsonSchemaMatcherTest.schema("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\",\"pattern\":\"^\\\\w{1,30}$\"}}}")
                .start(), "{\"n\":\"abc_9Zrich\"}", 20},
            {JsonSchemaMatcherTest.schema("{\"type\":\"string\",\"format\":\"uri\"}").start(), "\"https://ab.example/c/d?e=f#g\"", 40},
            {TextGrammar.regex("[a-z ]{0,60}x").start(), "ab cd ef gh ij kl mn op qr st uv wx yz ab cd ef gh ij kl x", 30},
            {TextGrammar.choice(List.of("reddest", "redder", "kindred")).start(), "redder", 10},
        };
        for (Object[] c : cases) {
            MatchState s = (MatchState) c[0];
            Set<MatchState> exact = new HashSet<>();
            Set<MatchState> keys = new HashSet<>();
            for (byte b : ((String) c[1]).getBytes(StandardCharsets.UTF_8)) {
                MatchState key = v.cacheKey(s);
                assertEquals(GuidedVocabularyTest.bruteForce(tokens, s), v.allowed(key).toBitSet(), c[1] + ": " + s);
                exact.add(s);
                keys.add(key);
                s = s.advance(b & 0xff);
                assertNotNull(s, (String) c[1]);
            }
            assertTrue(s.accepting(), (String) c[1]);
            assertTrue(keys.size() <= (int) c[2], c[1] + ": " + keys.size() + " key states for " + exact.size() + " exact ones");
        }
    }

    /** A real vocabulary: the note's 200 positions are a handful of cache entries, every mask the brute force's. */
    @Test
    void aGuideThroughABoundedPatternOnAFixtureVocabularyKeepsFewStates() throws Exception {
        try (HfTokenizer t = HfTokenizer.open(GuidedFixtures.fixture("tiny-chat-llama"))) {
            byte[][] tokens = new byte[t.vocabSize()][];
            for (int id = 0; id < tokens.length; id++) {
                tokens[id] = t.tokenBytes(id);
            }
            GuidedVocabulary v = GuidedVocabulary.of(tokens);
            JsonSchemaMatcher m = JsonSchemaMatcherTest.schema("{\"type\":\"string\",\"pattern\":\"" + NOTE + "\"}");
            ByteLanguage language = ((PatternFrame) m.start().advance('"').onlyHead()).language();
            int depth = v.walkDepth(language);
            assertTrue(depth > 3 && depth < 60, "the longest run of the note's bytes a token starts with: " + depth);
            Guide g = new Guide(v, m);
            int letter = -1;
            int quote = -1;
            for (int id = 0; id < tokens.length; id++) {
                String text = tokens[id] == null ? null : new String(tokens[id], StandardCharsets.UTF_8);
                letter = letter < 0 && "a".equals(text) ? id : letter;
                quote = quote < 0 && "\"".equals(text) ? id : quote;
            }
            g.mask(new float[tokens.length], Set.of());
            g.advance(quote);
            MatchState s = m.start().advance('"');
            int before = g.cachedStates();
            for (int i = 0; i < 200; i++) {
                float[] logits = new float[tokens.length];
                g.mask(logits, Set.of());
                if (i % 20 == 0 || i > 200 - depth - 2) {
                    BitSet allowed = new BitSet();
                    for (int id = 0; id < logits.length; id++) {
                        if (logits[id] == 0) {
                            allowed.set(id);
                        }
                    }
                    assertEquals(GuidedVocabularyTest.bruteForce(tokens, s), allowed, "after " + i + " characters");
                }
                g.advance(letter);
                s = s.advance('a');
            }
            int kept = g.cachedStates() - before;
            assertTrue(kept <= depth + 2, kept + " states kept for 200 positions (depth " + depth + ")");
        }
    }
}
