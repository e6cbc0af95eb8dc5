package io.phxfs.safetensors;

import java.util.AbstractSet;
import java.util.Iterator;
import java.util.List;

/**
 * One header's tensors by name: an open-addressing table of positions in the tensor list (4
 * bytes a slot, half full at most) instead of a map's entry object per tensor. For a header of
 * thousands of tensors the map was a sixth of the parse's allocation, and in a fresh JVM on a
 * VM, where each fresh page costs microseconds on first touch, allocation is most of the
 * parse's time. Immutable once built; safe to share between threads.
 */
final class NameIndex {
    private final List<TensorInfo> tensors;
    /** Position + 1 of the tensor in each slot; 0 for an empty slot. */
    private final int[] slots;
    private final int mask;
    private final String firstRepeat;

    /** Indexes {@code tensors} (which must not change afterwards); a name given twice is kept as {@link #firstRepeat}. */
    NameIndex(List<TensorInfo> tensors) {
        this.tensors = tensors;
        int capacity = Integer.highestOneBit(Math.max(4, tensors.size()) * 2 - 1) << 1;
        this.slots = new int[capacity];
        this.mask = capacity - 1;
        String repeat = null;
        for (int i = 0; i < tensors.size(); i++) {
            String name = tensors.get(i).name();
            int s = spread(name.hashCode()) & mask;
            while (slots[s] != 0) {
                if (repeat == null && tensors.get(slots[s] - 1).name().equals(name)) {
                    repeat = name;
                }
                s = (s + 1) & mask;
            }
            slots[s] = i + 1;
        }
        this.firstRepeat = repeat;
    }

    /** The first name found twice while indexing, or null when every name is unique. */
    String firstRepeat() {
        return firstRepeat;
    }

    /** The tensor of this name (the first of them, if given twice), or null. */
    TensorInfo get(Object name) {
        if (!(name instanceof String n)) {
            return null;
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
    java.util.Set<String> names() {
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
