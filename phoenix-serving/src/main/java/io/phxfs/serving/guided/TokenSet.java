package io.phxfs.serving.guided;

import java.util.Arrays;
import java.util.BitSet;
import java.util.function.IntConsumer;

/**
 * An immutable set of token ids, kept as small as its contents allow: the sorted ids where few
 * are in it (outside strings a schema leaves a few hundred of 200,000 tokens: 1.6 KB instead of a
 * 25 KB bitset), a bitset where many are (inside strings, nearly all). {@link Guide} keeps dozens
 * of these per request, so their size is what a request's masks cost in memory.
 */
public final class TokenSet {
    /** The set of no token. */
    public static final TokenSet EMPTY = new TokenSet(new int[0], null, 0);

    /** Sorted ids, or null when {@link #bits} holds the set. */
    private final int[] ids;
    private final BitSet bits;
    private final int size;

    private TokenSet(int[] ids, BitSet bits, int size) {
        this.ids = ids;
        this.bits = bits;
        this.size = size;
    }

    /**
     * The set of the ids in {@code bits}, in whichever form is smaller.
     *
     * @param bits the ids; kept (not copied) when the bitset form is chosen, so the caller must
     *        not change it afterwards
     * @param universe the ids' range, 0 to {@code universe - 1}: the width {@code bits} was made for
     * @return the set
     */
    static TokenSet of(BitSet bits, int universe) {
        int n = bits.cardinality();
        // an id costs 32 bits as an int; the bitset, one bit per id of the universe
        if ((long) n * Integer.SIZE <= Math.max(universe, bits.length())) {
            if (n == 0) {
                return EMPTY;
            }
            int[] ids = new int[n];
            for (int i = 0, id = bits.nextSetBit(0); id >= 0; id = bits.nextSetBit(id + 1)) {
                ids[i++] = id;
            }
            return new TokenSet(ids, null, n);
        }
        return new TokenSet(null, bits, n);
    }

    /**
     * The number of ids in the set.
     *
     * @return the count
     */
    public int size() {
        return size;
    }

    /**
     * Whether {@code id} is in the set.
     *
     * @param id a token id
     * @return true when it is
     */
    public boolean contains(int id) {
        if (id < 0) {
            return false;
        }
        return ids != null ? Arrays.binarySearch(ids, id) >= 0 : bits.get(id);
    }

    /**
     * Calls {@code action} with each id, in increasing order.
     *
     * @param action what to do with an id
     */
    public void forEach(IntConsumer action) {
        if (ids != null) {
            for (int id : ids) {
                action.accept(id);
            }
        } else {
            for (int id = bits.nextSetBit(0); id >= 0; id = bits.nextSetBit(id + 1)) {
                action.accept(id);
            }
        }
    }

    /** Whether the set is kept as sorted ids (for tests of its footprint). */
    boolean sparse() {
        return ids != null;
    }

    /**
     * The ids as a bitset, for comparisons.
     *
     * @return a new bitset
     */
    public BitSet toBitSet() {
        if (bits != null) {
            return (BitSet) bits.clone();
        }
        BitSet b = new BitSet();
        for (int id : ids) {
            b.set(id);
        }
        return b;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TokenSet t && t.size == size && t.toBitSet().equals(toBitSet());
    }

    @Override
    public int hashCode() {
        return toBitSet().hashCode();
    }

    @Override
    public String toString() {
        return (ids != null ? "TokenSet(sparse)" : "TokenSet(dense)") + toBitSet();
    }
}
