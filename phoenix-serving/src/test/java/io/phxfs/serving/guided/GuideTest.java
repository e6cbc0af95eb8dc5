package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.text.HfTokenizer;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.BitSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The vocabulary trie's allowed sets against a brute force over every token, and whole guided
 * generations from random logits: for the byte-level tiny-chat-llama and the SentencePiece
 * tiny-chat-gpt2 vocabularies, whatever the logits, a guided output that ends is a value of
 * its schema, and the end token comes only then.
 */
class GuideTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SCHEMA = """
            {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
              "kind": {"enum": ["a", "bb", "ccc"]}, "n": {"type": "integer"},
              "more": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}},
             "required": ["name", "kind"], "additionalProperties": false}""";
    private static HfTokenizer llama;
    private static HfTokenizer gpt2;

    @BeforeAll
    static void open() throws Exception {
        llama = HfTokenizer.open(GuidedFixtures.fixture("tiny-chat-llama"));
        gpt2 = HfTokenizer.open(GuidedFixtures.fixture("tiny-chat-gpt2"));
    }

    @AfterAll
    static void close() {
        llama.close();
        gpt2.close();
    }

    private static HfTokenizer tokenizer(String which) {
        return which.equals("llama") ? llama : gpt2;
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "gpt2"})
    void theTriesAllowedSetIsEveryTokenTheStateAccepts(String which) throws Exception {
        HfTokenizer t = tokenizer(which);
        GuidedVocabulary v = GuidedVocabulary.of(t, t.vocabSize());
        JsonSchemaMatcher m = JsonSchemaMatcher.compile(JSON.readTree(SCHEMA));
        String[] prefixes = {"", "{", "{\"na", "{\"name\": \"x", "{\"name\": \"xy\", \"kind\": \"b", "{\"name\": \"\", \"kind\": \"a\""};
        for (String p : prefixes) {
            MatchState s = m.start();
            for (byte b : p.getBytes(StandardCharsets.UTF_8)) {
                s = s.advance(b & 0xff);
            }
            assertNotNull(s, p);
            BitSet brute = new BitSet();
            for (int id = 0; id < t.vocabSize(); id++) {
                byte[] bytes = t.tokenBytes(id);
                if (bytes == null || bytes.length == 0) {
                    continue;
                }
                MatchState x = s;
                for (byte b : bytes) {
                    x = x == null ? null : x.advance(b & 0xff);
                }
                if (x != null) {
                    brute.set(id);
                }
            }
            assertEquals(brute, v.allowed(s).toBitSet(), which + " after \"" + p + "\"");
            assertFalse(brute.isEmpty(), p);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "gpt2"})
    void guidedGenerationsFromRandomLogitsAreValuesOfTheSchema(String which) throws Exception {
        HfTokenizer t = tokenizer(which);
        GuidedVocabulary v = GuidedVocabulary.of(t, t.vocabSize() + 7); // logits wider than the vocabulary, as models pad them
        JsonNode schema = JSON.readTree(SCHEMA);
        int eos = t.tokenId(t.eosToken().orElseThrow()).orElseThrow();
        Random rnd = new Random(5);
        int ended = 0;
        for (int run = 0; run < 40; run++) {
            Guide g = new Guide(v, JsonSchemaMatcher.compile(schema));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            boolean end = false;
            for (int step = 0; step < 300 && !end; step++) {
                float[] logits = new float[v.size()];
                for (int i = 0; i < logits.length; i++) {
                    logits[i] = (float) rnd.nextGaussian() * 3;
                }
                // an end token the model favours: it must still wait for a whole value
                logits[eos] = 5;
                boolean accepting = g.accepting();
                g.mask(logits, Set.of(eos));
                int id = argmax(logits);
                if (id == eos) {
                    assertTrue(accepting, which + ": the end came before the value was whole: " + out);
                    end = true;
                } else {
                    out.writeBytes(t.tokenBytes(id));
                    g.advance(id);
                }
            }
            if (end) {
                ended++;
                JsonNode value = JSON.readTree(out.toByteArray());
                assertTrue(value.isObject() && value.has("name") && value.has("kind"), which + ": " + out);
                assertTrue(Arrays.asList("a", "bb", "ccc").contains(value.get("kind").asText()), which + ": " + out);
                assertTrue(value.get("name").asText().codePointCount(0, value.get("name").asText().length()) <= 8);
            }
        }
        assertTrue(ended >= 30, which + ": " + ended + " of 40 guided runs ended within 300 tokens");
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "gpt2"})
    void guidedTextFromRandomLogitsMatchesItsRegexOrIsOneOfItsChoices(String which) {
        HfTokenizer t = tokenizer(which);
        GuidedVocabulary v = GuidedVocabulary.of(t, t.vocabSize());
        int eos = t.tokenId(t.eosToken().orElseThrow()).orElseThrow();
        String regex = "(\\+\\d{1,3} )?\\d{3}-[a-z]{2,5}(, [A-Z][a-z]{0,6}){0,2}";
        java.util.regex.Pattern oracle = java.util.regex.Pattern.compile(regex);
        List<String> choices = List.of("New York", "New York City", "Zürich", "São Paulo", "Paris");
        Random rnd = new Random(7);
        int matched = 0;
        for (int run = 0; run < 30; run++) {
            boolean choice = run % 2 == 1;
            Guide g = new Guide(v, choice ? TextGrammar.choice(choices) : TextGrammar.regex(regex));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            boolean end = false;
            for (int step = 0; step < 60 && !end && !g.finished(); step++) {
                float[] logits = new float[v.size()];
                for (int i = 0; i < logits.length; i++) {
                    logits[i] = (float) rnd.nextGaussian() * 3;
                }
                logits[eos] = 4;
                boolean accepting = g.accepting();
                g.mask(logits, Set.of(eos));
                int id = argmax(logits);
                if (id == eos) {
                    assertTrue(accepting, which + ": the end came before a whole match: " + out);
                    end = true;
                } else {
                    out.writeBytes(t.tokenBytes(id));
                    g.advance(id);
                }
            }
            if (end || g.finished()) {
                matched++;
                String text = out.toString(StandardCharsets.UTF_8);
                assertTrue(choice ? choices.contains(text) : oracle.matcher(text).matches(), which + ": \"" + text + "\"");
            }
        }
        assertTrue(matched >= 25, which + ": " + matched + " of 30 guided runs ended with a match");
    }

    @Test
    void theMaskKeepsTheAllowedTokensAndTheEndsOnlyWhereTheValueIsWhole() {
        byte[][] tokens = GuidedVocabularyTest.trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        JsonSchemaMatcher m = JsonSchemaMatcherTest.schema("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
                + "\"maxLength\":4},\"kind\":{\"enum\":[\"red\",\"redder\"]}},\"required\":[\"name\"]}");
        Set<Integer> ends = Set.of(0, 1, tokens.length + 3); // no bytes, empty bytes, past the logits
        Random rnd = new Random(9);
        int steps = 0;
        int accepting = 0;
        for (int run = 0; run < 60; run++) {
            Guide g = new Guide(v, m);
            MatchState s = m.start();
            for (int step = 0; step < 40; step++, steps++) {
                float[] logits = new float[tokens.length];
                for (int i = 0; i < logits.length; i++) {
                    logits[i] = rnd.nextInt(8) == 0 ? Float.NEGATIVE_INFINITY : (float) rnd.nextGaussian();
                }
                float[] before = logits.clone();
                g.mask(logits, ends);
                assertEquals(s.finished(), g.finished());
                TokenSet ok = s.finished() ? TokenSet.EMPTY : v.allowed(s);
                boolean any = false;
                for (int id = 0; id < logits.length; id++) {
                    boolean keep = ok.contains(id) || s.accepting() && ends.contains(id);
                    any |= keep && before[id] != Float.NEGATIVE_INFINITY;
                }
                for (int id = 0; id < logits.length; id++) {
                    boolean keep = ok.contains(id) || s.accepting() && ends.contains(id);
                    // a whole value with nothing left to choose ends (the ends at 0); one not whole is left
                    // with nothing, which the sampler reports
                    float expected = !any && s.accepting() && ends.contains(id) ? 0 : keep ? before[id] : Float.NEGATIVE_INFINITY;
                    assertEquals(expected, logits[id], "token " + id + " after " + s);
                }
                accepting += s.accepting() ? 1 : 0;
                int id = argmax(logits);
                if (ends.contains(id)) {
                    break;
                }
                g.advance(id);
                s = Bytes.feed(s, tokens[id]);
            }
        }
        assertTrue(accepting > 10 && steps > 300, accepting + " accepting states in " + steps + " steps");
    }

    @Test
    void aBoundedStringsPositionsAreNotKeptInTheCache() {
        byte[][] tokens = GuidedVocabularyTest.trickyVocabulary();
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        int quote = -1;
        int a = -1;
        for (int id = 0; id < tokens.length; id++) {
            if (tokens[id] != null && tokens[id].length == 1) {
                quote = tokens[id][0] == '"' ? id : quote;
                a = tokens[id][0] == 'a' ? id : a;
            }
        }
        Guide g = new Guide(v, JsonSchemaMatcherTest.schema("{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":40}}"));
        g.mask(new float[tokens.length], Set.of(0));
        g.advance(tokens.length); // no bytes: moves nothing
        int before = g.cachedStates();
        assertEquals(1, before, "the start is kept");
        for (String piece : new String[] {"[", "\""}) {
            for (int id = 0; id < tokens.length; id++) {
                if (tokens[id] != null && new String(tokens[id], StandardCharsets.UTF_8).equals(piece)) {
                    g.mask(new float[tokens.length], Set.of(0));
                    g.advance(id);
                    break;
                }
            }
        }
        int outside = g.cachedStates();
        for (int i = 0; i < 30; i++) {
            float[] logits = new float[tokens.length];
            g.mask(logits, Set.of(0));
            assertTrue(logits[a] == 0 && logits[quote] == 0, "step " + i);
            g.advance(a);
        }
        assertEquals(outside, g.cachedStates(), "30 positions inside the bounded string, none kept");
    }

    private static int argmax(float[] x) {
        int best = 0;
        for (int i = 1; i < x.length; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }
}
