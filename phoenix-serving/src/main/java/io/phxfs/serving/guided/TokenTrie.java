package io.phxfs.serving.guided;

import java.util.Arrays;
import java.util.BitSet;
import java.util.function.IntBinaryOperator;
import java.util.function.LongBinaryOperator;
import java.util.function.IntPredicate;

/**
 * A byte trie of some of a vocabulary's tokens, walked with a {@link MatchState}: a branch is cut
 * at the first byte the state refuses, so tokens that share a refused prefix are refused together
 * and a walk visits far fewer bytes than the tokens hold. Immutable.
 */
final class TokenTrie {
    /** Per node: the byte on the edge into it, its first child, its next sibling (-1: none). */
    private final byte[] label;
    private final int[] firstChild;
    private final int[] nextSibling;
    /** Per node: the first token ending there, then each token's next (-1: none). */
    private final int[] tokenHead;
    private final int[] nextToken;

    private TokenTrie(byte[] label, int[] firstChild, int[] nextSibling, int[] tokenHead, int[] nextToken) {
        this.label = label;
        this.firstChild = firstChild;
        this.nextSibling = nextSibling;
        this.tokenHead = tokenHead;
        this.nextToken = nextToken;
    }

    /**
     * The trie of the tokens that {@code include} selects among those with bytes.
     *
     * @param tokens per id its bytes, null or empty for ids never allowed
     * @param include which ids to put in
     */
    static TokenTrie of(byte[][] tokens, IntPredicate include) {
        int size = tokens.length;
        Integer[] order = new Integer[size];
        int n = 0;
        for (int id = 0; id < size; id++) {
            byte[] b = tokens[id];
            // a token that adds nothing would let a guided output run on without progress
            if (b != null && b.length > 0 && include.test(id)) {
                order[n++] = id;
            }
        }
        Integer[] ids = Arrays.copyOf(order, n);
        Arrays.sort(ids, (x, y) -> Arrays.compareUnsigned(tokens[x], tokens[y]));
        long bytes = 0;
        for (int id : ids) {
            bytes += tokens[id].length;
        }
        int cap = (int) Math.min(Integer.MAX_VALUE - 8, bytes + 1);
        byte[] label = new byte[cap];
        int[] firstChild = new int[cap];
        int[] nextSibling = new int[cap];
        int[] lastChild = new int[cap];
        int[] tokenHead = new int[cap];
        Arrays.fill(firstChild, -1);
        Arrays.fill(nextSibling, -1);
        Arrays.fill(lastChild, -1);
        Arrays.fill(tokenHead, -1);
        int[] nextToken = new int[size];
        Arrays.fill(nextToken, -1);
        int nodes = 1; // the root
        // the path of the previous token: sorted order shares its common prefix with this one
        int[] path = new int[64];
        byte[] previous = new byte[0];
        for (int id : ids) {
            byte[] b = tokens[id];
            int common = 0;
            while (common < b.length && common < previous.length && b[common] == previous[common]) {
                common++;
            }
            if (path.length < b.length + 1) {
                path = Arrays.copyOf(path, 2 * b.length + 1);
            }
            path[0] = 0;
            for (int i = common; i < b.length; i++) {
                int parent = path[i];
                int node = nodes++;
                label[node] = b[i];
                if (lastChild[parent] < 0) {
                    firstChild[parent] = node;
                } else {
                    nextSibling[lastChild[parent]] = node;
                }
                lastChild[parent] = node;
                path[i + 1] = node;
            }
            int end = path[b.length];
            nextToken[id] = tokenHead[end];
            tokenHead[end] = id;
            previous = b;
        }
        return new TokenTrie(Arrays.copyOf(label, nodes), Arrays.copyOf(firstChild, nodes),
                Arrays.copyOf(nextSibling, nodes), Arrays.copyOf(tokenHead, nodes), nextToken);
    }

    /** Adds to {@code out} every token of this trie whose bytes {@code state} reads to a live state. */
    void walk(MatchState state, BitSet out) {
        walkFrom(0, state, out);
    }

    /** As {@link #walk(MatchState, BitSet)} below {@code from}, reached with {@code state} (its own tokens too). */
    private void walkFrom(int from, MatchState state, BitSet out) {
        int[] nodeStack = new int[64];
        MatchState[] stateStack = new MatchState[64];
        nodeStack[0] = from;
        stateStack[0] = state;
        int top = 1;
        while (top > 0) {
            int node = nodeStack[--top];
            MatchState s = stateStack[top];
            stateStack[top] = null;
            if (node != 0) {
                for (int t = tokenHead[node]; t >= 0; t = nextToken[t]) {
                    out.set(t);
                }
            }
            for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
                MatchState next = s.advance(label[c] & 0xff);
                if (next != null) {
                    if (top == nodeStack.length) {
                        nodeStack = Arrays.copyOf(nodeStack, 2 * top);
                        stateStack = Arrays.copyOf(stateStack, 2 * top);
                    }
                    nodeStack[top] = c;
                    stateStack[top++] = next;
                }
            }
        }
    }

    /** What a byte step of {@link #walk(int, IntBinaryOperator, BitSet)} returns to take the whole subtree. */
    static final int EVERYTHING = Integer.MAX_VALUE;

    /**
     * Adds to {@code out} every token of this trie whose bytes a small automaton over int states
     * reads without dying: {@code step} gives the state after a byte, -1 for none, or
     * {@link #EVERYTHING} when any bytes may follow (the whole subtree is taken).
     */
    void walk(int start, IntBinaryOperator step, BitSet out) {
        int[] nodeStack = new int[64];
        int[] stateStack = new int[64];
        stateStack[0] = start;
        int top = 1;
        while (top > 0) {
            int node = nodeStack[--top];
            int s = stateStack[top];
            if (node != 0) {
                for (int t = tokenHead[node]; t >= 0; t = nextToken[t]) {
                    out.set(t);
                }
            }
            for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
                int next = s == EVERYTHING ? EVERYTHING : step.applyAsInt(s, label[c] & 0xff);
                if (next >= 0) {
                    if (top == nodeStack.length) {
                        nodeStack = Arrays.copyOf(nodeStack, 2 * top);
                        stateStack = Arrays.copyOf(stateStack, 2 * top);
                    }
                    nodeStack[top] = c;
                    stateStack[top++] = next;
                }
            }
        }
    }

    /** What a step of {@link #walk(long, LongBinaryOperator, MatchState, BitSet)} returns for a byte its automaton does not read. */
    static final long HANDOFF = -2;

    /**
     * A walk with a cheap automaton over long states standing in for {@code origin} (a string's
     * pattern, a text's language: an int step a byte instead of a matcher's configurations): a
     * byte it does not read itself ({@link #HANDOFF}, a string's closing quote) hands that subtree
     * to the matcher, from {@code origin} advanced along the subtree's bytes.
     */
    void walk(long start, LongBinaryOperator step, MatchState origin, BitSet out) {
        int[] nodeStack = new int[64];
        long[] stateStack = new long[64];
        int[] depthStack = new int[64];
        byte[] path = new byte[64];
        stateStack[0] = start;
        int top = 1;
        while (top > 0) {
            int node = nodeStack[--top];
            long s = stateStack[top];
            int depth = depthStack[top];
            if (node != 0) {
                if (depth > path.length) {
                    path = Arrays.copyOf(path, 2 * depth);
                }
                path[depth - 1] = label[node];
                for (int t = tokenHead[node]; t >= 0; t = nextToken[t]) {
                    out.set(t);
                }
            }
            for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
                long next = step.applyAsLong(s, label[c] & 0xff);
                if (next == HANDOFF) {
                    MatchState m = origin;
                    for (int i = 0; i < depth && m != null; i++) {
                        m = m.advance(path[i] & 0xff);
                    }
                    m = m == null ? null : m.advance(label[c] & 0xff);
                    if (m != null) {
                        walkFrom(c, m, out);
                    }
                } else if (next >= 0) {
                    if (top == nodeStack.length) {
                        nodeStack = Arrays.copyOf(nodeStack, 2 * top);
                        stateStack = Arrays.copyOf(stateStack, 2 * top);
                        depthStack = Arrays.copyOf(depthStack, 2 * top);
                    }
                    nodeStack[top] = c;
                    stateStack[top] = next;
                    depthStack[top++] = depth + 1;
                }
            }
        }
    }
}
