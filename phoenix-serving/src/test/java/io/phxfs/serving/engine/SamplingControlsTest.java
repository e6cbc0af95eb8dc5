package io.phxfs.serving.engine;

import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.serving.text.HfTokenizer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * vLLM's sampling and stopping controls: the penalties, logit_bias and min_p in the sampler (on
 * logits made up to decide the choice), and stop_token_ids, min_tokens,
 * include_stop_str_in_output and skip_special_tokens through the engine (against transformers'
 * greedy tokens of the tiny-chat-llama reference).
 */
class SamplingControlsTest {
    private static final String FIXTURE = "tiny-chat-llama";

    private static SamplingParams greedy(int max) {
        return SamplingParams.greedy(max);
    }

    private static float[] logits() {
        return new float[] {1.0f, 0.9f, 0.0f, -1.0f};
    }

    @Test
    void frequencyPresenceAndRepetitionPenaltiesAndLogitBiasMoveTheArgmax() {
        // token 0 leads token 1 by 0.1: once chosen, a frequency penalty of 0.2 puts it behind
        Sampler f = new Sampler(greedy(4).withPenalties(0, 0.2, 1, Map.of()));
        assertEquals(0, f.next(logits()));
        assertEquals(1, f.next(logits()));
        Sampler p = new Sampler(greedy(4).withPenalties(0.15, 0, 1, Map.of()));
        assertEquals(0, p.next(logits()));
        assertEquals(1, p.next(logits()));
        // the repetition penalty counts the prompt's tokens too: 1.0 / 1.2 < 0.9
        assertEquals(1, new Sampler(greedy(4).withPenalties(0, 0, 1.2, Map.of()), new int[] {0}).next(logits()));
        assertEquals(0, new Sampler(greedy(4).withPenalties(0, 0, 1.2, Map.of()), new int[] {2}).next(logits()));
        // and makes a negative logit more negative: -1 * 1.2
        float[] neg = {-1.0f, -1.1f};
        assertEquals(1, new Sampler(greedy(4).withPenalties(0, 0, 1.2, Map.of()), new int[] {0}).next(neg));
        assertEquals(3, new Sampler(greedy(4).withPenalties(0, 0, 1, Map.of(3, 2.5))).next(logits()));
        assertEquals(1, new Sampler(greedy(4).withPenalties(0, 0, 1, Map.of(0, -100.0))).next(logits()));
        // none set: the logits are the model's
        Sampler none = new Sampler(greedy(4));
        assertEquals(0, none.next(logits()));
        assertEquals(0, none.next(logits()));
    }

    @Test
    void minPKeepsOnlyTokensNearTheMostLikely() {
        // at temperature 1 token 1 is e^-0.1 (0.90) as likely as token 0, token 2 e^-1 (0.37)
        int[] seen = new int[4];
        for (long seed = 0; seed < 200; seed++) {
            SamplingParams sp = new SamplingParams(1.0, 1, 0, seed, 4, List.of(), false).withMinP(0.5);
            seen[new Sampler(sp).next(logits())]++;
        }
        assertTrue(seen[0] > 0 && seen[1] > 0, Arrays.toString(seen));
        assertEquals(0, seen[2] + seen[3], Arrays.toString(seen));
        int[] all = new int[4];
        for (long seed = 0; seed < 200; seed++) {
            all[new Sampler(new SamplingParams(1.0, 1, 0, seed, 4, List.of(), false)).next(logits())]++;
        }
        assertTrue(all[2] + all[3] > 0, Arrays.toString(all));
        // with top-k too
        for (long seed = 0; seed < 50; seed++) {
            SamplingParams sp = new SamplingParams(1.0, 1, 3, seed, 4, List.of(), false).withMinP(0.5);
            assertTrue(new Sampler(sp).next(logits()) < 2);
        }
    }

    @Test
    void beforeMinTokensTheEndingTokensAreRuledOut() {
        Sampler s = new Sampler(greedy(8).withStopping(2, List.of(1), false, true));
        // eos 0 and stop token 1 out for two tokens, then back
        assertEquals(2, s.next(logits(), Set.of(0)));
        assertEquals(2, s.next(logits(), Set.of(0)));
        assertEquals(0, s.next(logits(), Set.of(0)));
    }

    @Test
    void outOfRangeValuesAreRefusedNamingTheField() {
        SamplingParams g = greedy(4);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withPenalties(2.5, 0, 1, Map.of()))
                .getMessage().startsWith("presence_penalty:"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withPenalties(0, -3, 1, Map.of()))
                .getMessage().startsWith("frequency_penalty:"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withPenalties(0, 0, 0, Map.of()))
                .getMessage().startsWith("repetition_penalty:"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withPenalties(0, 0, 1, Map.of(1, 101.0)))
                .getMessage().startsWith("logit_bias:"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withMinP(1.5))
                .getMessage().startsWith("min_p:"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withStopping(5, List.of(), false, true))
                .getMessage().startsWith("min_tokens:"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> g.withStopping(0, List.of(-1), false, true))
                .getMessage().startsWith("stop_token_ids:"));
    }

    private static Collector.Result run(GenerationEngine e, int[] ids, SamplingParams p) throws Exception {
        Collector c = new Collector();
        e.submit(new GenerationRequest("c" + System.nanoTime(), ids, p, null), c);
        return c.await();
    }

    @Test
    void stopTokenIdsMinTokensIncludeStopStrAndSkipSpecialTokensThroughTheEngine() throws Exception {
        JsonNode ref = Fixtures.reference(FIXTURE);
        JsonNode c = ref.get("completions").get(0);
        int[] ids = Fixtures.ints(c.get("ids"));
        int[] g = Fixtures.ints(c.get("generated"));
        // a token of the greedy output not seen before it
        int at = 2;
        while (contains(Arrays.copyOf(g, at), g[at])) {
            at++;
        }
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir(FIXTURE)));
             HfTokenizer tok = HfTokenizer.open(Fixtures.dir(FIXTURE))) {
            Collector.Result stopped = run(e, ids, greedy(16).withStopping(0, List.of(g[at]), false, true));
            assertArrayEquals(Arrays.copyOf(g, at + 1), stopped.tokens());
            assertEquals(FinishReason.STOP, stopped.reason());
            // the stop token's text is left out, unless asked for
            assertEquals(run(e, ids, greedy(at)).text(), stopped.text());
            Collector.Result kept = run(e, ids, greedy(16).withStopping(0, List.of(g[at]), true, true));
            assertEquals(run(e, ids, greedy(at + 1)).text(), kept.text());

            // min_tokens: the stop token cannot come before, so the output differs from the greedy one there
            Collector.Result late = run(e, ids, greedy(16).withStopping(at + 1, List.of(g[at]), false, true));
            assertTrue(late.tokens().length > at, Arrays.toString(late.tokens()));
            assertNotEquals(g[at], late.tokens()[at]);

            // a stop string returned with the text before it
            String full = c.get("generated_text").asText();
            String stop = full.substring(full.length() / 2, full.length() / 2 + 3);
            SamplingParams withStop = new SamplingParams(0, 1, 0, null, 16, List.of(stop), false);
            assertEquals(full.substring(0, full.indexOf(stop) + stop.length()),
                    run(e, ids, withStop.withStopping(0, List.of(), true, true)).text());
            assertEquals(full.substring(0, full.indexOf(stop)), run(e, ids, withStop).text());

            // a special token forced by logit_bias: in the text only with skip_special_tokens false
            int bos = tok.tokenId(tok.bosToken().orElseThrow()).orElseThrow();
            SamplingParams forced = greedy(2).withPenalties(0, 0, 1, Map.of(bos, 100.0));
            Collector.Result hidden = run(e, ids, forced);
            assertArrayEquals(new int[] {bos, bos}, hidden.tokens());
            assertEquals("", hidden.text());
            assertEquals(tok.bosToken().orElseThrow().repeat(2),
                    run(e, ids, forced.withStopping(0, List.of(), false, false)).text());
        }
    }

    private static boolean contains(int[] a, int v) {
        return Arrays.stream(a).anyMatch(x -> x == v);
    }
}
