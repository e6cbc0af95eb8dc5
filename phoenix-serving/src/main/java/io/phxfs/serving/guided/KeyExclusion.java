package io.phxfs.serving.guided;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;

/**
 * The declared property names, as sorted UTF-8 byte strings, that an additional ("free") key must
 * differ from: otherwise a free key could repeat a declared property with a value its schema does
 * not allow. Keys sharing the bytes read so far form a contiguous range of the sorted names, so a
 * string frame tracks the comparison in three ints. Free keys of such objects take no escapes
 * (else <code>"&#92;u0061"</code> would slip past a declared {@code "a"}); a name that needs escaping can
 * then never be equalled, so only the raw bytes matter.
 */
final class KeyExclusion {
    private final byte[][] names;

    KeyExclusion(Collection<String> declared) {
        names = declared.stream().map(n -> n.getBytes(StandardCharsets.UTF_8)).sorted(Arrays::compareUnsigned)
                .toArray(byte[][]::new);
    }

    int size() {
        return names.length;
    }

    /**
     * The start of the range of names in {@code [lo, hi)} (all sharing the {@code pos} bytes read)
     * whose next byte is {@code b}; {@link #narrowEnd} gives its end.
     */
    int narrowStart(int lo, int hi, int pos, int b) {
        int i = lo;
        while (i < hi && (names[i].length <= pos || (names[i][pos] & 0xFF) < b)) {
            i++;
        }
        return i;
    }

    /** The end of the range that {@link #narrowStart} begins. */
    int narrowEnd(int start, int hi, int pos, int b) {
        int i = start;
        while (i < hi && names[i].length > pos && (names[i][pos] & 0xFF) == b) {
            i++;
        }
        return i;
    }

    /** Whether a name in the range {@code [lo, hi)} is exactly the {@code pos} bytes read (the shortest sorts first). */
    boolean completes(int lo, int hi, int pos) {
        return lo < hi && names[lo].length == pos;
    }
}
