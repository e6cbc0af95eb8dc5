package io.phxfs.serving.guided;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * The configurations that one byte leads to, deduplicated by value. Most steps produce none or
 * one, which take no array; a few more are scanned linearly with a hash check; a hash set takes
 * over only for large sets.
 */
final class Successors {
    private static final int LINEAR_LIMIT = 8;

    private FrameStack first;
    private FrameStack[] items;
    private int size;
    private Set<FrameStack> index;

    void add(FrameStack s) {
        if (size == 0) {
            first = s;
            size = 1;
            return;
        }
        if (index != null) {
            if (!index.add(s)) {
                return;
            }
        } else {
            for (int i = 0; i < size; i++) {
                FrameStack t = get(i);
                if (t == s || (t.hashCode() == s.hashCode() && t.equals(s))) {
                    return;
                }
            }
            if (size == LINEAR_LIMIT) {
                index = new HashSet<>(Arrays.asList(toArray()));
                index.add(s);
            }
        }
        if (items == null) {
            items = new FrameStack[4];
            items[0] = first;
        } else if (size == items.length) {
            items = Arrays.copyOf(items, size * 2);
        }
        items[size++] = s;
    }

    private FrameStack get(int i) {
        return i == 0 ? first : items[i];
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
            if (configs[i] != get(i)) {
                return false;
            }
        }
        return true;
    }

    FrameStack[] toArray() {
        return items == null ? new FrameStack[] {first} : Arrays.copyOf(items, size);
    }
}
