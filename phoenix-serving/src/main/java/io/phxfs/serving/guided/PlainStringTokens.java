package io.phxfs.serving.guided;

import java.util.BitSet;

/**
 * The tokens that are plain string text: bytes that read, inside a JSON string, as whole
 * characters with nothing special among them (no quote, no backslash, no control byte, valid and
 * complete UTF-8), with their character counts. Inside a string whose remaining length allows
 * {@code n} more characters, every such token of at most {@code n} characters is allowed whatever
 * the text before it, so these tokens need no walk there: the idea of xgrammar's
 * context-independent token cache, fitted to this matcher. Computed once per vocabulary.
 */
final class PlainStringTokens {
    /** The plain tokens, fewest characters first. */
    private final int[] byCount;
    /** {@code countStart[c]}: the index in {@link #byCount} of the first token of c or more characters. */
    private final int[] countStart;
    private final BitSet all;
    private final int size;

    private PlainStringTokens(int[] byCount, int[] countStart, BitSet all, int size) {
        this.byCount = byCount;
        this.countStart = countStart;
        this.all = all;
        this.size = size;
    }

    /**
     * Classifies a vocabulary's tokens.
     *
     * @param tokens per id its bytes, null for ids never allowed
     */
    static PlainStringTokens of(byte[][] tokens) {
        int size = tokens.length;
        int[] count = new int[size];
        int maxCount = 0;
        int plain = 0;
        for (int id = 0; id < size; id++) {
            count[id] = tokens[id] == null ? -1 : characters(tokens[id]);
            if (count[id] > 0) {
                plain++;
                maxCount = Math.max(maxCount, count[id]);
            }
        }
        // a counting sort by characters, ids ascending within a count
        int[] countStart = new int[maxCount + 2];
        for (int id = 0; id < size; id++) {
            if (count[id] > 0) {
                countStart[count[id] + 1]++;
            }
        }
        for (int c = 1; c < countStart.length; c++) {
            countStart[c] += countStart[c - 1];
        }
        int[] fill = countStart.clone();
        int[] byCount = new int[plain];
        BitSet all = new BitSet(size);
        for (int id = 0; id < size; id++) {
            if (count[id] > 0) {
                byCount[fill[count[id]]++] = id;
                all.set(id);
            }
        }
        return new PlainStringTokens(byCount, countStart, all, size);
    }

    /**
     * The characters {@code bytes} read as inside a string's text, or -1 when they are not plain
     * text: the string lexer itself decides, so the two cannot disagree on what is plain.
     */
    static int characters(byte[] bytes) {
        int mode = Utf8StringLexer.TEXT;
        int chars = 0;
        for (byte b : bytes) {
            // no escapes: a backslash is never plain (it changes what the bytes after it mean)
            int r = Utf8StringLexer.step(mode, b & 0xFF, false);
            if (r < 0 || (r & Utf8StringLexer.CLOSES) != 0) {
                return -1;
            }
            if ((r & Utf8StringLexer.STARTS_CHAR) != 0) {
                chars++;
            }
            mode = r & Utf8StringLexer.MODE_MASK;
        }
        // a token that ends inside a character is not plain: what may follow depends on it
        return mode == Utf8StringLexer.TEXT && bytes.length > 0 ? chars : -1;
    }

    /** Whether token {@code id} is plain text. */
    boolean contains(int id) {
        return all.get(id);
    }

    /**
     * The plain tokens of at most {@code room} characters.
     *
     * @param room the characters left, 0 or more
     * @return a new set
     */
    BitSet upTo(int room) {
        // room may be Integer.MAX_VALUE: compare before adding
        int end = room >= countStart.length - 1 ? byCount.length : countStart[room + 1];
        if (end == byCount.length) {
            return (BitSet) all.clone();
        }
        BitSet out;
        // touch whichever side of the cut is shorter
        if (end < byCount.length / 2) {
            out = new BitSet(size);
            for (int i = 0; i < end; i++) {
                out.set(byCount[i]);
            }
        } else {
            out = (BitSet) all.clone();
            for (int i = end; i < byCount.length; i++) {
                out.clear(byCount[i]);
            }
        }
        return out;
    }

    @Override
    public String toString() {
        return "PlainStringTokens[" + byCount.length + " of " + size + ", up to " + (countStart.length - 2) + " chars]";
    }
}
