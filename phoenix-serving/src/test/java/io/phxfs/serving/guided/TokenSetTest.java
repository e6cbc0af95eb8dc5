package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link TokenSet}: the same set in either form, the form by size, and the allowed sets' forms. */
class TokenSetTest {
    @Test
    void eitherFormHoldsTheSameIdsInIncreasingOrder() {
        Random rnd = new Random(3);
        for (int density : new int[] {1, 10, 100, 5000, 9000}) {
            BitSet bits = new BitSet();
            for (int id = 0; id < 10_000; id++) {
                if (rnd.nextInt(10_000) < density) {
                    bits.set(id);
                }
            }
            TokenSet s = TokenSet.of((BitSet) bits.clone(), 10_000);
            assertEquals(bits.cardinality(), s.size());
            assertEquals(bits, s.toBitSet());
            assertEquals(bits.cardinality() * 32 <= 10_000, s.sparse(), "density " + density);
            for (int id = -1; id < 10_010; id++) {
                assertEquals(bits.get(Math.max(id, 0)) && id >= 0, s.contains(id), "id " + id);
            }
            List<Integer> seen = new ArrayList<>();
            s.forEach(seen::add);
            assertEquals(bits.stream().boxed().toList(), seen);
        }
        assertEquals(0, TokenSet.of(new BitSet(), 5).size());
        assertFalse(TokenSet.EMPTY.contains(0));
    }

    @Test
    void allowedSetsAreIdsOutsideStringsAndBitsInside() {
        // the hard cases and 20,000 words, as a real vocabulary is mostly words
        byte[][] tricky = GuidedVocabularyTest.trickyVocabulary();
        byte[][] tokens = java.util.Arrays.copyOf(tricky, tricky.length + 20_000);
        for (int i = tricky.length; i < tokens.length; i++) {
            tokens[i] = ("w" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        GuidedVocabulary v = GuidedVocabulary.of(tokens);
        JsonSchemaMatcher m = JsonSchemaMatcherTest.schema("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                + "\"n\":{\"type\":\"integer\"}},\"required\":[\"name\",\"n\"]}");
        assertTrue(v.allowed(m.start()).sparse());
        assertTrue(v.allowed(Bytes.feed(m, "{\"name\":")).sparse());
        assertFalse(v.allowed(Bytes.feed(m, "{\"name\":\"ab")).sparse());
        assertTrue(v.allowed(Bytes.feed(m, "{\"name\":\"ab\"")).sparse());
    }
}
