package io.phxfs.safetensors;

import java.util.AbstractSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One header's tensors by name: an open-addressing table of positions in the tensor list (4
 * bytes a slot, half full at most) instead of a map's entry object per tensor. For a header of
 * thousands of tensors the map was a sixth of the parse's allocation, and in a fresh JVM on a
 * VM, where each fresh page costs microseconds on first touch, allocation is most of the
 * parse's time. Immutable once built; safe to share between threads.
 *
 * <p>A header is the file's writer's to choose, names included: names made to share one
 * {@link String#hashCode} would make linear probing quadratic (a million of them fit in the
 * 100 MB header limit). A probe longer than {@link #MAX_PROBE} slots therefore switches the
 * index to a {@link HashMap}, whose bins of colliding strings are trees.
 */
final class NameIndex {
    /** Longer than any probe of honest names (the table is at most half full). */
    static final int MAX_PROBE = 64;

    private final List<TensorInfo> tensors;
    /** Position + 1 of the tensor in each slot; 0 for an empty slot; null once {@link #fallback} is used. */
    private final int[] slots;
    private final int mask;
    /** Name to position, when some probe ran past {@link #MAX_PROBE}; else null. */
    private final Map<String, Integer> fallback;
    private final String firstRepeat;

    /**
     * Indexes {@code tensors} (which must not change afterwards). A name given twice stops the
     * indexing there, as the header holding it is refused ({@link #firstRepeat}): the index is
     * then not to be used.
     */
    NameIndex(List<TensorInfo> tensors) {
        this.tensors = tensors;
        int capacity = Integer.highestOneBit(Math.max(4, tensors.size()) * 2 - 1) << 1;
        int[] table = new int[capacity];
        int m = capacity - 1;
        String repeat = null;
        boolean tooLong = false;
        insert:
        for (int i = 0; i < tensors.size(); i++) {
            String name = tensors.get(i).name();
            int s = spread(name.hashCode()) & m;
            for (int probe = 0; table[s] != 0; probe++) {
                if (tensors.get(table[s] - 1).name().equals(name)) {
                    repeat = name;
                    break insert;
                }
                if (probe == MAX_PROBE) {
                    tooLong = true;
                    break insert;
                }
                s = (s + 1) & m;
            }
            table[s] = i + 1;
        }
        Map<String, Integer> map = null;
        if (tooLong) {
            table = null;
            map = HashMap.newHashMap(tensors.size());
            for (int i = 0; i < tensors.size(); i++) {
                if (map.putIfAbsent(tensors.get(i).name(), i) != null) {
                    repeat = tensors.get(i).name();
                    break;
                }
            }
        }
        this.slots = table;
        this.mask = m;
        this.fallback = map;
        this.firstRepeat = repeat;
    }

    /** The first name found twice (in list order), or null when every name is unique. */
    String firstRepeat() {
        return firstRepeat;
    }

    /** Whether a probe ran too long and names are looked up in a {@link HashMap} instead. */
    boolean usesFallback() {
        return fallback != null;
    }

    /** The tensor of this name, or null. */
    TensorInfo get(Object name) {
        if (!(name instanceof String n)) {
            return null;
        }
        if (fallback != null) {
            Integer i = fallback.get(n);
            return i == null ? null : tensors.get(i);
        }
        for (int s = spread(n.hashCode()) & mask; slots[s] != 0; s = (s + 1) & mask) {
            TensorInfo t = tensors.get(slots[s] - 1);
            if (t.name().equals(n)) {
                return t;
            }
        }
        return null;
    }

    /** The names in list order, as an unmodifiable set backed by this index. */
    Set<String> names() {
        return new AbstractSet<>() {
            @Override
            public Iterator<String> iterator() {
                Iterator<TensorInfo> it = tensors.iterator();
                return new Iterator<>() {
                    @Override
                    public boolean hasNext() {
                        return it.hasNext();
                    }

                    @Override
                    public String next() {
                        return it.next().name();
                    }
                };
            }

            @Override
            public int size() {
                return tensors.size();
            }

            @Override
            public boolean contains(Object o) {
                return get(o) != null;
            }
        };
    }

    /** Names of one model share long prefixes: the high bits of String.hashCode are mixed in. */
    private static int spread(int h) {
        return h ^ (h >>> 16);
    }
}
