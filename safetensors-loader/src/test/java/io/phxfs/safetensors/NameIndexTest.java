package io.phxfs.safetensors;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

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

    @Test
    void findsEveryNameAmongCollidingHashesAndKeepsListOrder() {
        // "Aa" and "BB" share a String.hashCode, as do their concatenations: every probe chain is exercised
        List<TensorInfo> ts = new ArrayList<>();
        String[] parts = {"Aa", "BB"};
        for (int i = 0; i < 64; i++) {
            StringBuilder b = new StringBuilder();
            for (int k = 0; k < 6; k++) {
                b.append(parts[(i >> k) & 1]);
            }
            ts.add(t(b.toString(), i));
        }
        assertEquals(1, ts.stream().map(x -> x.name().hashCode()).distinct().count(), "the names collide");
        NameIndex idx = new NameIndex(ts);
        assertNull(idx.firstRepeat());
        for (TensorInfo x : ts) {
            assertSame(x, idx.get(x.name()));
        }
        assertNull(idx.get("AaAaAaAaAaAaAa"));
        assertNull(idx.get(42));
        Set<String> names = idx.names();
        assertEquals(ts.stream().map(TensorInfo::name).toList(), List.copyOf(names));
        assertEquals(64, names.size());
        assertTrue(names.contains("BBBBBBBBBBBB"));
        assertFalse(names.contains("CC"));
        assertThrows(UnsupportedOperationException.class, () -> names.add("x"));
    }

    @Test
    void reportsTheFirstNameGivenTwiceAndAnEmptyListIsIndexed() {
        NameIndex idx = new NameIndex(List.of(t("a", 0), t("b", 1), t("c", 2), t("b", 3), t("a", 4)));
        assertEquals("b", idx.firstRepeat());
        NameIndex empty = new NameIndex(List.of());
        assertNull(empty.firstRepeat());
        assertNull(empty.get("a"));
        assertEquals(0, empty.names().size());
    }
}
