package io.phxfs.serving.guided;

import io.phxfs.serving.text.HfTokenizer;
import java.util.Arrays;
import java.util.BitSet;

/**
 * A model's vocabulary as a trie of its tokens' bytes ({@link HfTokenizer#tokenBytes}), for
 * finding the tokens a guided output may continue with: walking the trie from a
 * {@link MatchState}, a branch is cut at the first byte the state refuses, so tokens that share
 * a refused prefix are refused together and the walk visits far fewer bytes than the
 * vocabulary holds. Built once per server; immutable, so requests on any thread share it.
 */
public final class GuidedVocabulary {
    private final int size;
    /** Per id its bytes (the tokenizer's arrays), null where it has none. */
    private final byte[][] bytes;
    /** Per node: the byte on the edge into it, its first child, its next sibling (-1: none). */
    private final byte[] label;
    private final int[] firstChild;
    private final int[] nextSibling;
    /** Per node: the first token ending there, then each token's next (-1: none). */
    private final int[] tokenHead;
    private final int[] nextToken;

    private GuidedVocabulary(int size, byte[][] bytes, byte[] label, int[] firstChild, int[] nextSibling, int[] tokenHead,
                             int[] nextToken) {
        this.size = size;
        this.bytes = bytes;
        this.label = label;
        this.firstChild = firstChild;
        this.nextSibling = nextSibling;
        this.tokenHead = tokenHead;
        this.nextToken = nextToken;
    }

    /**
     * The trie of ids {@code 0 .. size - 1} (the model's logits, which may be wider than the
     * tokenizer's vocabulary: ids without bytes are never allowed).
     *
     * @param tokenizer the model's tokenizer
     * @param size the width of the model's logits
     * @return the trie
     */
    public static GuidedVocabulary of(HfTokenizer tokenizer, int size) {
        byte[][] all = new byte[size][];
        for (int id = 0; id < size; id++) {
            all[id] = tokenizer.tokenBytes(id);
        }
        return of(all);
    }

    /**
     * The trie of tokens given as their bytes.
     *
     * @param tokens per id its bytes, null for ids that are never allowed (special, unknown);
     *        kept, not copied
     * @return the trie
     */
    public static GuidedVocabulary of(byte[][] tokens) {
        int size = tokens.length;
        byte[][] all = tokens;
        Integer[] order = new Integer[size];
        int n = 0;
        for (int id = 0; id < size; id++) {
            byte[] b = all[id];
            // a token that adds nothing would let a guided output run on without progress
            if (b != null && b.length > 0) {
                order[n++] = id;
            }
        }
        Integer[] ids = Arrays.copyOf(order, n);
        Arrays.sort(ids, (x, y) -> Arrays.compareUnsigned(all[x], all[y]));
        long bytes = 0;
        for (int id : ids) {
            bytes += all[id].length;
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
            byte[] b = all[id];
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
        return new GuidedVocabulary(size, all, Arrays.copyOf(label, nodes), Arrays.copyOf(firstChild, nodes),
                Arrays.copyOf(nextSibling, nodes), Arrays.copyOf(tokenHead, nodes), nextToken);
    }

    /**
     * The width of the logits this vocabulary covers.
     *
     * @return the number of ids
     */
    public int size() {
        return size;
    }

    /**
     * The bytes a token adds to the text.
     *
     * @param id the token
     * @return its bytes (shared: do not change them), or null for special and unknown tokens
     */
    public byte[] bytes(int id) {
        return id >= 0 && id < size ? bytes[id] : null;
    }

    /**
     * The tokens whose bytes a state accepts, each leading to a live state.
     *
     * @param state where the output is
     * @return the allowed ids (a new set)
     */
    public BitSet allowed(MatchState state) {
        BitSet out = new BitSet(size);
        int[] nodeStack = new int[64];
        MatchState[] stateStack = new MatchState[64];
        int top = 0;
        for (int c = firstChild[0]; c >= 0; c = nextSibling[c]) {
            MatchState s = state.advance(label[c] & 0xff);
            if (s != null) {
                if (top == nodeStack.length) {
                    nodeStack = Arrays.copyOf(nodeStack, 2 * top);
                    stateStack = Arrays.copyOf(stateStack, 2 * top);
                }
                nodeStack[top] = c;
                stateStack[top++] = s;
            }
        }
        while (top > 0) {
            int node = nodeStack[--top];
            MatchState s = stateStack[top];
            stateStack[top] = null;
            for (int t = tokenHead[node]; t >= 0; t = nextToken[t]) {
                out.set(t);
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
        return out;
    }
}
