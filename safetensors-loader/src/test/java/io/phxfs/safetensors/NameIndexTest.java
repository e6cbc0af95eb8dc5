package io.phxfs.safetensors;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NameIndexTest {
    private static TensorInfo t(String name, long begin) {
        return new TensorInfo(name, Dtype.U8, new long[] {1}, begin, begin + 1, 1);
    }

    /** 2^k names of 2k characters sharing one String.hashCode ("Aa" and "BB" hash alike), after {@code prefix}. */
    private static List<String> colliding(String prefix, int k) {
        List<String> names = new ArrayList<>(1 << k);
        for (int i = 0; i < 1 << k; i++) {
            StringBuilder b = new StringBuilder(prefix);
            for (int bit = 0; bit < k; bit++) {
                b.append(((i >> bit) & 1) == 0 ? "Aa" : "BB");
            }
            names.add(b.toString());
        }
        assertEquals(1, names.stream().map(String::hashCode).distinct().count(), "the names collide");
        return names;
    }

    private static List<TensorInfo> tensors(List<String> names) {
        List<TensorInfo> ts = new ArrayList<>(names.size());
        for (String n : names) {
            ts.add(t(n, ts.size()));
        }
        return ts;
    }

    private static int home(String name, int capacity) {
        int h = name.hashCode();
        return (h ^ (h >>> 16)) & (capacity - 1);
    }

    @Test
    void findsEveryNameOfACollisionChainThatWrapsPastTheTableEndAndMissesTheOthers() {
        // 32 colliding names in a table of 64 slots whose chain starts 8 slots before its end,
        // so that the probe wraps; the other 32 names of the family hash alike and must miss
        String prefix = null;
        for (int p = 0; prefix == null; p++) {
            if (home("p" + p + "AaAaAaAaAaAa", 64) == 56) {
                prefix = "p" + p;
            }
        }
        List<String> all = colliding(prefix, 6);
        List<String> in = new ArrayList<>();
        List<String> out = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            (i % 2 == 0 ? in : out).add(all.get(i));
        }
        List<TensorInfo> ts = tensors(in);
        NameIndex idx = new NameIndex(ts);
        assertNull(idx.firstRepeat());
        assertFalse(idx.usesFallback(), "32 probes are within the bound");
        for (TensorInfo x : ts) {
            assertSame(x, idx.get(x.name()));
        }
        for (String miss : out) {
            assertNull(idx.get(miss), miss);
        }
        assertNull(idx.get(null));
        assertNull(idx.get(42));
        Set<String> names = idx.names();
        assertEquals(in, List.copyOf(names));
        assertEquals(32, names.size());
        assertTrue(names.contains(in.get(31)));
        assertFalse(names.contains(out.get(0)));
        assertThrows(UnsupportedOperationException.class, () -> names.add("x"));
        assertThrows(UnsupportedOperationException.class, names::clear);
    }

    /**
     * Names made to collide (a header is its writer's to choose) would make linear probing
     * quadratic: past the probe bound the index is a HashMap, whose bins of strings are trees.
     * 65,536 such names took minutes before the bound; the timeout only catches a regression.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void namesMadeToCollideFallBackToAMapAndStayCorrect() {
        List<String> all = colliding("w", 16);
        List<TensorInfo> ts = tensors(all);
        NameIndex idx = new NameIndex(ts);
        assertTrue(idx.usesFallback());
        assertNull(idx.firstRepeat());
        for (int i = 0; i < ts.size(); i += 997) {
            assertSame(ts.get(i), idx.get(all.get(i)));
        }
        assertNull(idx.get("w" + "Aa".repeat(15) + "Ab"));
        assertEquals(all, List.copyOf(idx.names()));
        // a repeat among them is still found
        List<TensorInfo> withRepeat = new ArrayList<>(tensors(colliding("v", 8)));
        withRepeat.add(t(withRepeat.get(100).name(), withRepeat.size()));
        NameIndex r = new NameIndex(withRepeat);
        assertTrue(r.usesFallback());
        assertEquals(withRepeat.get(100).name(), r.firstRepeat());
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void reportsTheFirstNameGivenTwiceAndStopsThere() {
        NameIndex idx = new NameIndex(List.of(t("a", 0), t("b", 1), t("c", 2), t("b", 3), t("a", 4)));
        assertEquals("b", idx.firstRepeat());
        // a header of one name given 200,000 times (each entry tiles an empty data section)
        // stops at the second, as the map's put did
        NameIndex many = new NameIndex(Collections.nCopies(200_000, t("a", 0)));
        assertEquals("a", many.firstRepeat());
        NameIndex empty = new NameIndex(List.of());
        assertNull(empty.firstRepeat());
        assertNull(empty.get("a"));
        assertEquals(0, empty.names().size());
    }
}
