package io.phxfs.serving.guided;

import java.util.HashSet;
import java.util.Set;

/**
 * The configurations that one byte leads to, deduplicated by value. Most steps produce one or a
 * handful, which a linear scan with a hash check handles without allocating; a hash set takes over
 * only for large sets.
 */
final class Successors {
    private static final int LINEAR_LIMIT = 8;

    private FrameStack[] items = new FrameStack[4];
    private int size;
    private Set<FrameStack> index;

    void add(FrameStack s) {
        if (index != null) {
            if (!index.add(s)) {
                return;
            }
        } else {
            for (int i = 0; i < size; i++) {
                FrameStack t = items[i];
                if (t == s || (t.hashCode() == s.hashCode() && t.equals(s))) {
                    return;
                }
            }
            if (size == LINEAR_LIMIT) {
                index = new HashSet<>();
                for (int i = 0; i < size; i++) {
                    index.add(items[i]);
                }
                index.add(s);
            }
        }
        if (size == items.length) {
            items = java.util.Arrays.copyOf(items, size * 2);
        }
        items[size++] = s;
    }

    int size() {
        return size;
    }

    /** Whether these are exactly the given configurations, the same objects in the same order. */
    boolean sameAs(FrameStack[] configs) {
        if (configs.length != size) {
            return false;
        }
        for (int i = 0; i < size; i++) {
            if (configs[i] != items[i]) {
                return false;
            }
        }
        return true;
    }

    FrameStack[] toArray() {
        return java.util.Arrays.copyOf(items, size);
    }
}
