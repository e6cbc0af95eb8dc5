package io.phxfs.serving.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.guided.Guide;
import io.phxfs.serving.guided.GuidedVocabulary;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.text.HfTokenizer;
import java.io.ByteArrayOutputStream;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The sampler with a guide, against the request's other settings: ignore_eos, stop tokens that
 * the schema's own text uses, a logit_bias that rules out every allowed token. A guided output
 * ends when its value is whole, with or without an end token, and never stops half written.
 */
class GuidedSamplerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SCHEMA = "{\"type\": \"object\", \"properties\": {\"k\": {\"enum\": [\"ab\", \"cd\"]},"
            + " \"n\": {\"type\": \"boolean\"}}, \"required\": [\"k\", \"n\"], \"additionalProperties\": false}";
    private static HfTokenizer tokenizer;
    private static GuidedVocabulary vocabulary;
    private static int eos;

    @BeforeAll
    static void open() throws Exception {
        tokenizer = HfTokenizer.open(Fixtures.dir("tiny-chat-llama"));
        vocabulary = GuidedVocabulary.of(tokenizer, tokenizer.vocabSize());
        eos = tokenizer.tokenId(tokenizer.eosToken().orElseThrow()).orElseThrow();
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static Guide guide() throws Exception {
        return new Guide(vocabulary, JsonSchemaMatcher.compile(JSON.readTree(SCHEMA)));
    }

    /** Random logits with the end token the most likely; returns the text and whether the sampler ended it. */
    private static String run(Sampler s, Random rnd, boolean[] ended) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int step = 0; step < 400; step++) {
            float[] logits = new float[vocabulary.size()];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) rnd.nextGaussian();
            }
            logits[eos] = 4;
            int t = s.next(logits, Set.of(eos));
            if (s.guidedEnd()) {
                ended[0] = true;
                return out.toString(java.nio.charset.StandardCharsets.UTF_8);
            }
            out.writeBytes(vocabulary.bytes(t) == null ? new byte[0] : vocabulary.bytes(t));
            if (s.guideFinished()) {
                return out.toString(java.nio.charset.StandardCharsets.UTF_8);
            }
        }
        throw new AssertionError("no end in 400 steps: " + out);
    }

    private static void assertValue(String text) throws Exception {
        JsonNode v = JSON.readTree(text);
        assertTrue(List.of("ab", "cd").contains(v.path("k").asText()) && v.path("n").isBoolean(), text);
    }

    @Test
    void aWholeValueEndsTheOutputEvenWithIgnoreEos() throws Exception {
        Random rnd = new Random(3);
        for (int i = 0; i < 10; i++) {
            Sampler s = new Sampler(new SamplingParams(1.0, 1, 0, 7L + i, 100, List.of(), true), new int[0], guide());
            boolean[] ended = new boolean[1];
            String text = run(s, rnd, ended);
            assertFalse(ended[0], "ignore_eos: no end token is chosen");
            assertTrue(s.guideFinished(), text);
            assertValue(text);
        }
    }

    @Test
    void stopTokensTheSchemasTextUsesAreTextUntilTheValueIsWhole() throws Exception {
        List<Integer> stops = new java.util.ArrayList<>();
        for (String t : List.of("}", "\"", ",", "{")) {
            for (int id : tokenizer.encode(t, false)) {
                stops.add(id);
            }
        }
        Random rnd = new Random(4);
        for (int i = 0; i < 10; i++) {
            SamplingParams p = new SamplingParams(1.0, 1, 0, 11L + i, 100, List.of(), false).withStopping(0, stops, false, true);
            Sampler s = new Sampler(p, new int[0], guide());
            boolean[] ended = new boolean[1];
            String text = run(s, rnd, ended);
            assertValue(text.strip());
        }
    }

    /**
     * A state where the schema allows nothing (a required property whose schema is false): the
     * request fails naming why, rather than emit a token outside the schema or an end.
     */
    @Test
    void aStateWithNothingAllowedFailsTheRequestRatherThanBreakTheSchema() throws Exception {
        Guide g = new Guide(vocabulary, JsonSchemaMatcher.compile(JSON.readTree(
                "{\"type\": \"object\", \"properties\": {\"a\": false}, \"required\": [\"a\"]}")));
        Sampler s = new Sampler(SamplingParams.greedy(200), new int[0], g);
        IllegalStateException e = null;
        for (int step = 0; step < 100 && e == null; step++) {
            float[] logits = new float[vocabulary.size()];
            logits[eos] = 10;
            try {
                s.next(logits, Set.of(eos));
                assertFalse(s.guidedEnd(), "no end before a whole value");
            } catch (IllegalStateException x) {
                e = x;
            }
        }
        assertTrue(e != null, "the whitespace the schema allows runs out and nothing is left");
        assertTrue(e.getMessage().contains("no token can continue the output as the schema requires"), e.getMessage());
    }
}
