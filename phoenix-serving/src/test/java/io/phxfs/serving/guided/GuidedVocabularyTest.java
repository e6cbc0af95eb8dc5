package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.text.HfTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link GuidedVocabulary#allowed} against the brute force (every token read byte by byte from the
 * state) on states of the schema corpus, for a vocabulary made to hold the hard cases (quotes,
 * escapes, control bytes, partial UTF-8 at either end, the same bytes under two ids) and for the
 * fixtures' real ones; and {@link MatchState#plainStringRoom}, which lets strings skip the walk.
 */
class GuidedVocabularyTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Tokens that test the plain-text split: each kind of byte the string lexer treats apart. */
    static byte[][] trickyVocabulary() {
        Set<String> texts = new LinkedHashSet<>();
        for (String t : new String[] {"\"", "\",", "\"}", "\":", "\": \"", "\"]", "\\\"", "\\\\", "\\n", "\\u00", "\\u00e9",
            "\\ud83d", "\\ude00", "\\", "e9\"", " \"", "\"\"", "\"a\"", "\n", "\t", "\u007f", "a", "ab", "abc", "abcd", "abcde",
            "abcdef", "abcdefghij", " the", "hello world", "red", "redder", "reddest", "celsius", "kind", "kindred", "name",
            "names", "id", "tru", "true", "null", "12", "1.5e3", "-", ",", "{", "}", "[", "]", ":", " ", "  ", "é", "中文",
            "😀", "𝄞", "ß", "€", "x\"", "ab\",\"", "a\\u", "Zürich", "{\"", "\"v\"", "ok"}) {
            texts.add(t);
        }
        List<byte[]> out = new ArrayList<>();
        out.add(null); // an id with no bytes (a special token)
        out.add(new byte[0]);
        for (int b = 0; b < 256; b++) {
            out.add(new byte[] {(byte) b});
        }
        for (String t : texts) {
            out.add(t.getBytes(StandardCharsets.UTF_8));
        }
        out.add("ab".getBytes(StandardCharsets.UTF_8)); // the same bytes again under another id
        // slices of mixed text: partial characters at either end, quotes and escapes inside
        byte[] sample = "héllo wörld 中文 😀 \"q\" \\n {\"k\": [1, 2.5, true, null]} ß€𝄞 aé".getBytes(StandardCharsets.UTF_8);
        for (int from = 0; from < sample.length; from++) {
            for (int len = 1; len <= 6 && from + len <= sample.length; len++) {
                byte[] s = new byte[len];
                System.arraycopy(sample, from, s, 0, len);
                out.add(s);
            }
        }
        return out.toArray(byte[][]::new);
    }

    static BitSet bruteForce(byte[][] tokens, MatchState s) {
        BitSet brute = new BitSet();
        for (int id = 0; id < tokens.length; id++) {
            if (tokens[id] != null && tokens[id].length > 0 && Bytes.feed(s, tokens[id]) != null) {
                brute.set(id);
            }
        }
        return brute;
    }

    /** States along random instances of every corpus schema, written compact, pretty and ASCII-escaped. */
    static List<MatchState> corpusStates(int seeds, int perText) throws Exception {
        List<MatchState> states = new ArrayList<>();
        Random pick = new Random(11);
        for (int i = 0; i < SchemaCorpus.ENTRIES.size(); i++) {
            JsonSchemaMatcher m = JsonSchemaMatcher.compile(SchemaCorpus.ENTRIES.get(i).schema());
            for (int seed = 0; seed < seeds; seed++) {
                JsonNode instance = new RandomInstances(SchemaCorpus.ENTRIES.get(i).schema(), seed).next();
                for (String text : new String[] {JSON.writeValueAsString(instance),
                    JSON.writerWithDefaultPrettyPrinter().writeValueAsString(instance),
                    JSON.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII).writeValueAsString(instance)}) {
                    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
                    MatchState s = m.start();
                    for (int k = 0; k < bytes.length && s != null; k++) {
                        if (pick.nextInt(Math.max(1, bytes.length / perText)) == 0) {
                            states.add(s);
                        }
                        s = s.advance(bytes[k] & 0xFF);
                    }
                }
            }
        }
        return states;
    }

    @Test
    void allowedIsTheBruteForceOnCorpusStatesForAVocabularyOfHardCases() throws Exception {
        byte[][] tokens = trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        int inText = 0;
        int bounded = 0;
        for (MatchState s : corpusStates(25, 40)) {
            assertEquals(bruteForce(tokens, s), v.allowed(s).toBitSet(), s.toString());
            int room = s.plainStringRoom();
            inText += room >= 0 ? 1 : 0;
            bounded += room >= 0 && room < Integer.MAX_VALUE ? 1 : 0;
        }
        // the table's path was taken, for bounded strings too
        assertTrue(inText > 500 && bounded > 50, inText + " states in string text, " + bounded + " bounded");
    }

    private static final byte[][] TRICKY = trickyVocabulary();
    private static final GuidedVocabulary TRICKY_VOCABULARY = GuidedVocabulary.of(TRICKY);

    @Property(tries = 300)
    void allowedIsTheBruteForceOnRandomStatesOfTheCorpus(@ForAll @IntRange(min = 0, max = 19) int schema,
            @ForAll long seed, @ForAll @IntRange(min = 0, max = 2) int style, @ForAll @IntRange(min = 0, max = 999) int cut)
            throws Exception {
        int i = Math.min(schema, SchemaCorpus.ENTRIES.size() - 1);
        JsonNode instance = new RandomInstances(SchemaCorpus.ENTRIES.get(i).schema(), seed).next();
        String text = switch (style) {
            case 0 -> JSON.writeValueAsString(instance);
            case 1 -> JSON.writerWithDefaultPrettyPrinter().writeValueAsString(instance);
            default -> JSON.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII).writeValueAsString(instance);
        };
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        // any cut, through escapes and characters too; the state may be dead where the matcher refuses a rewriting
        MatchState s = Bytes.feed(JsonSchemaMatcher.compile(SchemaCorpus.ENTRIES.get(i).schema()).start(),
                java.util.Arrays.copyOf(bytes, cut % (bytes.length + 1)));
        if (s != null) {
            assertEquals(bruteForce(TRICKY, s), TRICKY_VOCABULARY.allowed(s).toBitSet(), SchemaCorpus.ENTRIES.get(i).name() + ": " + s);
        }
    }

    @Test
    void allowedIsTheBruteForceInsideStringsOfEveryKind() {
        byte[][] tokens = trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        String[][] cases = {
            {"{\"type\":\"string\",\"maxLength\":3}", "\"", "\"a", "\"ab", "\"abc", "\"é", "\"\\u00e9", "\"\\u00", "\"\\"},
            {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":5}", "\"", "\"a", "\"ab", "\"\u00e9\u00e9\u00e9", "\"abcde"},
            {"{\"type\":\"string\",\"minLength\":4}", "\"", "\"ab", "\"abcd", "\"abcdefgh"},
            {"{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},{\"type\":\"string\",\"maxLength\":6}]}", "\"", "\"ab", "\"abc"},
            {"{\"anyOf\":[{\"type\":\"string\",\"maxLength\":3},{\"const\":\"redder\"}]}", "\"", "\"red", "\"redd"},
            {"{\"enum\":[\"red\",\"reddest\",\"kind\"]}", "\"", "\"red", "\"redd"},
            {"{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"}},"
                + "\"additionalProperties\":{\"type\":\"string\",\"maxLength\":1}}", "{\"", "{\"ki", "{\"kind\":\"x\",\"", "{\"na",
                "{\"names", "{\"kind\":\"", "{\"kind\":\"x\",\"name\":\"y\",\"kin", "{\"kind\":\"x\",\"name\":\"y\",\"k\":\""},
            {"{\"type\":\"object\"}", "{\"", "{\"a", "{\"a\":\"b", "{\"a\":\"\\u"},
            {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":2}}", "[\"", "[\"a", "[\"ab", "[\"ab\",\"\u00e9"},
            {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"^[a-z\u00e9]+(-[a-z]+)?$\",\"maxLength\":5}}",
                "[\"", "[\"a", "[\"ab-", "[\"abc-d", "[\"\u00e9\u00e9", "[\"ab\",\"re"},
            {"{\"anyOf\":[{\"type\":\"string\",\"pattern\":\"^red\"},{\"type\":\"string\",\"format\":\"ipv4\"}]}", "\"", "\"1",
                "\"re"},
            {"{\"type\":\"string\",\"format\":\"uri\",\"maxLength\":30}", "\"", "\"https://a", "\"https://ab.cd/e?f=%2", "\"http://x.io#"},
        };
        for (String[] c : cases) {
            JsonSchemaMatcher m = JsonSchemaMatcherTest.schema(c[0]);
            for (int k = 1; k < c.length; k++) {
                MatchState s = Bytes.feed(m, c[k]);
                assertNotNull(s, c[0] + " after " + c[k]);
                assertEquals(bruteForce(tokens, s), v.allowed(s).toBitSet(), c[0] + " after " + c[k]);
                // and cut inside the last character: a partial UTF-8 state at the start of the token
                byte[] b = c[k].getBytes(StandardCharsets.UTF_8);
                if (b[b.length - 1] < 0) {
                    MatchState partial = Bytes.feed(m.start(), java.util.Arrays.copyOf(b, b.length - 1));
                    assertNotNull(partial, c[k]);
                    assertEquals(-1, partial.plainStringRoom(), c[k]);
                    assertEquals(bruteForce(tokens, partial), v.allowed(partial).toBitSet(), c[0] + " inside the last character of " + c[k]);
                }
            }
        }
    }

    @Test
    void farFromAPatternsMaxLengthTheStateWithoutTheCountAllowsTheSame() {
        byte[][] tokens = trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        String url = "\"https://docs.example.com/guides/regular-expressions?lang=en#top";
        for (int max : new int[] {2083, 80, url.length() - 1}) {
            JsonSchemaMatcher m = JsonSchemaMatcherTest.schema("{\"type\":\"string\",\"format\":\"uri\",\"maxLength\":" + max + "}");
            MatchState s = m.start();
            int dropped = 0;
            int kept = 0;
            for (byte b : url.getBytes(StandardCharsets.UTF_8)) {
                s = s.advance(b & 0xff);
                MatchState n = v.withoutFarBound(s);
                dropped += n != s ? 1 : 0;
                kept += n == s ? 1 : 0;
                assertEquals(bruteForce(tokens, s), v.allowed(n).toBitSet(), max + " after " + s);
            }
            assertTrue(max == 2083 ? kept == 0 : kept > 0, max + ": near the bound the count stays (" + kept + ")");
            assertTrue(dropped > 0 || max < 80, max + ": far from it the count goes (" + dropped + ")");
        }
    }

    @Test
    void allowedIsTheBruteForceAlongTextOutputs() {
        byte[][] tokens = trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        Object[][] cases = {
            {TextGrammar.regex("\\d{3}-\\d{4}( [A-Z][a-z\u00e9]+)*"), "555-0123 New Yorké"},
            {TextGrammar.choice(List.of("red", "redder", "r\u00e9d \"q\"", "")), "redder"},
            {TextGrammar.choice(List.of("r\u00e9d \"q\"", "a")), "r\u00e9d \"q\""},
        };
        for (Object[] c : cases) {
            MatchState s = ((TextGrammar) c[0]).start();
            for (byte b : ((String) c[1]).getBytes(StandardCharsets.UTF_8)) {
                assertEquals(bruteForce(tokens, s), v.allowed(s).toBitSet(), c[1] + ": " + s);
                s = s.advance(b & 0xff);
            }
            assertTrue(s.accepting(), (String) c[1]);
            assertEquals(bruteForce(tokens, s), v.allowed(s).toBitSet(), c[1] + " whole");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-chat-llama", "tiny-chat-gpt2"})
    void allowedIsTheBruteForceOnCorpusStatesForTheFixtureVocabularies(String fixture) throws Exception {
        try (HfTokenizer t = HfTokenizer.open(GuidedFixtures.fixture(fixture))) {
            byte[][] tokens = new byte[t.vocabSize()][];
            for (int id = 0; id < tokens.length; id++) {
                tokens[id] = t.tokenBytes(id);
            }
            GuidedVocabulary v = GuidedVocabulary.of(tokens);
            int inText = 0;
            for (MatchState s : corpusStates(3, 6)) {
                assertEquals(bruteForce(tokens, s), v.allowed(s).toBitSet(), fixture + ": " + s);
                inText += s.plainStringRoom() >= 0 ? 1 : 0;
            }
            assertTrue(inText > 20, inText + " states in string text");
        }
    }

    @Test
    void plainStringRoomSaysHowMuchPlainTextAStateTakes() {
        assertEquals(Integer.MAX_VALUE, room("{\"type\":\"string\"}", "\"ab"));
        assertEquals(3, room("{\"type\":\"string\",\"maxLength\":5}", "\"ab"));
        assertEquals(0, room("{\"type\":\"string\",\"maxLength\":2}", "\"\u00e9b"));
        assertEquals(2, room("{\"type\":\"string\",\"maxLength\":3}", "\"\\u00e9"), "an escape is one character");
        assertEquals(Integer.MAX_VALUE, room("{\"type\":\"string\",\"minLength\":3}", "\"a"));
        assertEquals(3, room("{\"type\":\"string\",\"minLength\":3,\"maxLength\":3}", "\""));
        // the largest room of the alternatives
        assertEquals(5, room("{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},{\"type\":\"string\",\"maxLength\":6}]}", "\"a"));
        // not free text: an enum, a const beside a string, a declared key, an escape, inside a character, outside strings
        assertEquals(-1, room("{\"enum\":[\"ab\",\"abc\"]}", "\"a"));
        assertEquals(-1, room("{\"anyOf\":[{\"type\":\"string\"},{\"const\":\"abc\"}]}", "\"a"));
        assertEquals(-1, room("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}", "{\"na"));
        assertEquals(-1, room("{\"type\":\"string\"}", "\"a\\"));
        assertEquals(-1, room("{\"type\":\"string\"}", "\"a\\u00"));
        assertEquals(-1, Bytes.feed(JsonSchemaMatcherTest.schema("{\"type\":\"string\"}").start(), new byte[] {'"', (byte) 0xE4})
                .plainStringRoom());
        assertEquals(-1, room("{\"type\":\"string\"}", ""));
        assertEquals(-1, room("{\"type\":\"string\"}", "\"a\""));
        // a free key beside declared ones: plain text never breaks the exclusion, only the closing quote can
        assertEquals(Integer.MAX_VALUE, room("{\"type\":\"object\",\"additionalProperties\":true}", "{\"x"));
    }

    private static int room(String schema, String prefix) {
        MatchState s = Bytes.feed(JsonSchemaMatcherTest.schema(schema), prefix);
        assertNotNull(s, schema + " after " + prefix);
        return s.plainStringRoom();
    }

    @Test
    void plainTokensAreWholeCharactersWithoutQuotesEscapesOrControls() {
        assertEquals(3, PlainStringTokens.characters("abc".getBytes(StandardCharsets.UTF_8)));
        assertEquals(2, PlainStringTokens.characters("中😀".getBytes(StandardCharsets.UTF_8)));
        assertEquals(1, PlainStringTokens.characters(new byte[] {0x7F}));
        for (byte[] not : new byte[][] {"a\"".getBytes(StandardCharsets.UTF_8), "\\n".getBytes(StandardCharsets.UTF_8),
            {'a', '\n'}, {(byte) 0xC3}, {(byte) 0xA9, 'a'}, {'a', (byte) 0xE4, (byte) 0xB8}, {(byte) 0xC0, (byte) 0x80},
            {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, {}}) {
            assertEquals(-1, PlainStringTokens.characters(not), java.util.Arrays.toString(not));
        }
    }

}
