package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.regex.Pattern;
import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.Operations;
import org.junit.jupiter.api.Test;

/**
 * The regular expressions of {@code pattern}, {@code guided_regex} and {@code guided_choice}
 * against java.util.regex as the oracle (its full match, on the subset the parser reads, is
 * ECMA-262's and Python's), on the code-point automaton and, byte by byte, on the guide's UTF-8
 * language: the same strings match, every prefix of a match is live, and nothing else is.
 */
class RegexParserTest {
    /** Patterns as schemas and vLLM requests write them, with the oracle's spelling where it differs. */
    private static final List<String> PATTERNS = List.of(
            "^[A-Z]{2}-[0-9]{3}$", "^\\d{3}-\\d{4}$", "[a-z]+(\\.[a-z]+)*@[a-z]+\\.(com|org)", "(yes|no|maybe)",
            "^(\\+\\d{1,3} )?\\(?\\d{3}\\)?[ -]?\\d{3}-\\d{4}$", "\\w+\\s\\w+", "[^aeiou\\s]{2,4}", "a.c", "x*?y+?z??",
            "(?:ab|cd){2,}", "(?<year>\\d{4})-(?P<month>\\d\\d)", "\\x41\\u00e9(\\uD83D\\uDE00)?", "[\\d\\-.]+", "caf\u00e9|na\u00efve",
            "[\\w.-]+", "colou?r", "\\$\\d+\\.\\d{2}", "[\u4e00-\u9fff]{1,3}", "^$|^x$", "a{2}b{0,1}c{1,}", "\\{\\}\\[\\]",
            "[+*?]", "\\\\n", "a\\tb", "\\S+\\W\\D", "]a]", "{x}", "(a|)b");

    private static final String ALPHABET = "abcdexyzAZ019-.@+()[]{} \t\n$\\é😀中nuoiC";

    /**
     * Both of Java's readings: ASCII classes and Unicode ones. The parser's {@code \\d \\w \\s} are
     * the ASCII classes and its {@code \\D \\W \\S} the complements of the Unicode ones, so that
     * what it matches, every dialect matches: on these patterns, what Java matches both ways.
     */
    private static boolean oracle(Pattern p, String s) {
        return p.matcher(s).matches() && Pattern.compile(p.pattern(), Pattern.UNICODE_CHARACTER_CLASS).matcher(s).matches();
    }

    /** Java's spelling of the same pattern: named groups without the P. */
    private static Pattern javaPattern(String regex) {
        // a brace that opens no quantifier is text in ECMA-262 and Python; Java wants it escaped
        String j = regex.equals("{x}") ? "\\{x\\}" : regex.replace("(?P<", "(?<");
        return Pattern.compile(j);
    }

    private static String random(Random rnd, int len) {
        int[] cps = ALPHABET.codePoints().toArray();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < len; i++) {
            sb.appendCodePoint(cps[rnd.nextInt(cps.length)]);
        }
        return sb.toString();
    }

    /** Strings that match, built by mutating near-misses until they match, so that matches are tested too. */
    @Test
    void theAutomatonMatchesWhatJavaMatchesWholeOnEveryPattern() {
        Random rnd = new Random(3);
        for (String regex : PATTERNS) {
            Automaton a = Operations.determinize(RegexParser.parse(regex), 100_000);
            Pattern p = javaPattern(regex);
            ByteLanguage bytes = ByteLanguage.of(a, regex);
            int matched = 0;
            for (String s : samples(regex, rnd)) {
                boolean want = oracle(p, s);
                assertEquals(want, Operations.run(a, s), regex + " on \"" + s + "\"");
                assertEquals(want, byteMatch(bytes, s), regex + " bytes on \"" + s + "\"");
                matched += want ? 1 : 0;
            }
            assertTrue(matched > 0, regex + ": some sample matched");
        }
    }

    /** Random strings, and the strings of a few hand-picked shapes near each pattern's language. */
    private static List<String> samples(String regex, Random rnd) {
        java.util.ArrayList<String> out = new java.util.ArrayList<>(List.of("", "AB-123", "555-1234", "a.b@c.com", "yes",
                "+1 (555) 123-4567", "555 123-4567", "hello world", "xyz", "abc", "a\nc", "y", "xyyz", "abcd", "cdab",
                "2024-01", "A", "Aé😀", "1-2.3", "a.b-c", "color", "colour", "$12.50", "中文", "x", "aab", "aabccc", "{}[]",
                "+", "\\n", "a\tb", "ab!c", "b", "café", "naïve", "]a]", "a", "{x}", "bd"));
        for (int i = 0; i < 300; i++) {
            out.add(random(rnd, rnd.nextInt(8)));
        }
        return out;
    }

    /** Whether the UTF-8 bytes of {@code s} are a whole string of {@code l}. */
    static boolean byteMatch(ByteLanguage l, String s) {
        int state = l.start();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            state = l.step(state, b & 0xff);
            if (state < 0) {
                return false;
            }
        }
        return l.accepts(state);
    }

    @Test
    void everyLivePrefixLeadsToAMatchAndDeadOnesAreCutAtTheirFirstByte() {
        ByteLanguage l = ByteLanguage.of(RegexParser.parse("(ab|a😀)c{2}"), "t");
        int s = l.start();
        for (byte b : "a😀".getBytes(StandardCharsets.UTF_8)) {
            s = l.step(s, b & 0xff);
            assertTrue(s >= 0, "inside a character's bytes the state lives on");
            assertFalse(l.accepts(s));
        }
        assertEquals(-1, l.step(l.step(l.start(), 'a'), 'c'), "'ac' starts no match");
        assertEquals(-1, l.step(l.start(), 0xF0), "a 4-byte character the pattern does not start with");
    }

    @Test
    void refusedConstructsAreNamedWithTheirPlace() {
        record Case(String pattern, String says, int at) { }
        for (Case c : List.of(new Case("a(?=b)", "lookarounds", 1), new Case("a{,3}", "{,n}", 1), new Case("(a)\\1", "backreference", 3),
                new Case("\\bword", "word boundary", 0), new Case("(?i)abc", "inline flags", 0), new Case("a*+", "possessive", 2),
                new Case("a^b", "'^' other than", 1), new Case("a$b", "'$' other than", 1), new Case("(a$)", "'$' other than", 2),
                new Case("\\p{L}", "Unicode property", 0), new Case("[a", "unterminated character class", 0),
                new Case("(ab", "missing ')'", 3), new Case("ab)", "unbalanced ')'", 2), new Case("*a", "nothing to repeat", 0),
                new Case("a{3,2}", "out of order", 1), new Case("a{1001}", "above 1000", 1), new Case("[z-a]", "out of order", 4),
                new Case("\\q", "unknown escape", 0), new Case("[]a]", "']' first", 1), new Case("\\uD800", "lone surrogate", 0),
                new Case("a\\", "trailing backslash", 2))) {
            UnsupportedPatternException e = assertThrows(UnsupportedPatternException.class, () -> RegexParser.parse(c.pattern()),
                    c.pattern());
            assertTrue(e.getMessage().contains(c.says()), c.pattern() + ": " + e.getMessage());
            assertEquals(c.at(), e.index(), c.pattern() + ": " + e.getMessage());
        }
    }

    @Test
    void languagesThatCannotBeBuiltOrHoldNothingAreRefused() {
        IllegalArgumentException big = assertThrows(IllegalArgumentException.class,
                () -> TextGrammar.regex("(a|b)*a(a|b){18}"));
        assertTrue(big.getMessage().contains("too complex"), big.getMessage());
        // a string's content holds no unescaped quote: a pattern that needs one has no output
        IllegalArgumentException quote = assertThrows(IllegalArgumentException.class,
                () -> StringContent.matching("\"[a-z]+\"", 0));
        assertTrue(quote.getMessage().contains("matches no string"), quote.getMessage());
        IllegalArgumentException len = assertThrows(IllegalArgumentException.class,
                () -> StringContent.matching("[a-z]{5}", 6));
        assertTrue(len.getMessage().contains("minLength"), len.getMessage());
        assertThrows(IllegalArgumentException.class, () -> TextGrammar.choice(List.of()));
    }

    @Test
    void choicesThatExtendOneAnotherAreAllReachable() {
        TextGrammar g = TextGrammar.choice(List.of("New York", "New York City", "Paris"));
        MatchState s = g.start();
        for (byte b : "New York".getBytes(StandardCharsets.UTF_8)) {
            s = s.advance(b & 0xff);
        }
        assertTrue(s.accepting());
        assertFalse(s.finished(), "a space goes on to \"New York City\": text, not JSON whitespace");
        assertNotNull(s.advance(' '));
        for (byte b : " City".getBytes(StandardCharsets.UTF_8)) {
            s = s.advance(b & 0xff);
        }
        assertTrue(s.finished());
    }

    /** The text's state under {@code schema}, null where it died. */
    private static MatchState read(String schema, String text) {
        MatchState s = JsonSchemaMatcherTest.schema(schema).start();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            s = s == null ? null : s.advance(b & 0xff);
        }
        return s;
    }

    @Test
    void aMaxLengthBesideAPatternAllowsOnlyWhatStillEndsWithinIt() {
        String hyphen = "{\"type\":\"string\",\"pattern\":\"^[a-z]+(-[a-z]+)?$\",\"maxLength\":4}";
        assertNotNull(read(hyphen, "\"ab-c\""));
        assertEquals(null, read(hyphen, "\"abc-"), "'-' needs two more characters; one is left");
        assertEquals(null, read(hyphen, "\"ab-cd"));
        assertEquals(null, read(hyphen, "\"ab-\""), "not a match yet");
        String accents = "{\"type\":\"string\",\"pattern\":\"^é+$\",\"maxLength\":2}";
        assertTrue(read(accents, "\"éé\"").accepting(), "characters, not bytes");
        assertEquals(null, read(accents, "\"éé\u00c3".substring(0, 4)), "a third character's lead byte");
        String url = "{\"type\":\"string\",\"format\":\"uri\",\"minLength\":1,\"maxLength\":2083}";
        String path = "https://example.com/" + "a".repeat(2083 - 20);
        assertEquals(2083, path.length());
        assertTrue(read(url, "\"" + path + "\"").accepting(), "a URL of exactly 2083 characters");
        assertEquals(null, read(url, "\"" + path + "a"), "one more");
        assertEquals(null, read(url, "\"ftp:"), "http or https");
    }

    @Test
    void aGrammarCompiledLatelyIsReusedForTheSameText() throws Exception {
        String p = "[a-z]{0,900}";
        TextGrammar first = TextGrammar.regex(p);
        assertTrue(first == TextGrammar.regex(p), "the same pattern: the same grammar");
        assertFalse(first == TextGrammar.regex(p + "x"));
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        JsonSchemaMatcher m = JsonSchemaMatcher.compile(json.readTree("{\"type\":\"string\",\"pattern\":\"^a+$\"}"));
        assertTrue(m == JsonSchemaMatcher.compile(json.readTree("{\"type\": \"string\", \"pattern\": \"^a+$\"}")),
                "the same schema, spaced differently");
        assertThrows(UnsupportedPatternException.class, () -> TextGrammar.regex("(?=x)"));
        assertThrows(UnsupportedPatternException.class, () -> TextGrammar.regex("(?=x)"), "a refusal is not kept");
    }
}
