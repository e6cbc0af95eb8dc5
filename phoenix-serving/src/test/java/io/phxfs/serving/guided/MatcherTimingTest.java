package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A rough measure of {@link MatchState#advance} as token masking uses it: from states along a
 * tool-call output, walk a synthetic vocabulary of 32k JSON-ish tokens byte by byte until each
 * dies. Prints nanoseconds per advance; asserts nothing about time.
 */
class MatcherTimingTest {
    private static final String[] PIECES = {"{", "}", "[", "]", ",", ":", "\"", " ", "\n", "  ", "\":", "\",", "\"}",
        "name", "get", "_weather", "city", "Paris", "unit", "celsius", "parameters", "true", "null", "1", "23", ".5",
        "e", "-", "\\n", "\\u00", "é", "中", "the", " the", "ing", "s", "\"name\"", "\": \"", "\"parameters\": {"};

    @Test
    void advanceTiming() {
        JsonSchemaMatcher m = JsonSchemaMatcher.compile(SchemaCorpus.ENTRIES.stream()
                .filter(e -> e.name().equals("tool calls")).findFirst().orElseThrow().schema());
        Random rnd = new Random(7);
        List<byte[]> vocab = new ArrayList<>();
        for (int i = 0; i < 32768; i++) {
            StringBuilder sb = new StringBuilder();
            for (int k = 1 + rnd.nextInt(3); k > 0; k--) {
                sb.append(PIECES[rnd.nextInt(PIECES.length)]);
            }
            vocab.add(sb.toString().getBytes(StandardCharsets.UTF_8));
        }
        String output = "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}]";
        List<MatchState> states = new ArrayList<>();
        MatchState s = m.start();
        for (byte b : output.getBytes(StandardCharsets.UTF_8)) {
            states.add(s);
            s = s.advance(b & 0xFF);
        }
        long advances = 0;
        long live = 0;
        long t0 = 0;
        for (int round = 0; round < 4; round++) { // the first rounds warm the JIT up
            if (round == 2) {
                t0 = System.nanoTime();
                advances = 0;
                live = 0;
            }
            for (MatchState from : states) {
                for (byte[] token : vocab) {
                    MatchState x = from;
                    for (int k = 0; k < token.length && x != null; k++) {
                        x = x.advance(token[k] & 0xFF);
                        advances++;
                    }
                    if (x != null) {
                        live++;
                    }
                }
            }
        }
        double ns = (System.nanoTime() - t0) / (double) advances;
        System.out.printf("guided matcher: %d advances over %d states x %d tokens (x2 rounds), %.1f ns per advance, %d tokens live%n",
                advances, states.size(), vocab.size(), ns, live);
        assertTrue(live > 0);
    }
}
