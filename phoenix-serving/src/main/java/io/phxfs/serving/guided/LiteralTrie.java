package io.phxfs.serving.guided;

import java.util.Arrays;

/**
 * A node of a byte trie of literal values (the compact JSON of enum and const values, true,
 * false, null, a property's quoted name): reading a set of literals through one trie keeps a single
 * configuration however many literals share a prefix.
 */
final class LiteralTrie {
    private byte[] labels = new byte[0];
    private LiteralTrie[] children = new LiteralTrie[0];
    private boolean terminal;

    /** Adds {@code literal} below this node. */
    void add(byte[] literal) {
        LiteralTrie node = this;
        for (byte b : literal) {
            LiteralTrie next = node.child(b & 0xFF);
            if (next == null) {
                next = new LiteralTrie();
                node.labels = Arrays.copyOf(node.labels, node.labels.length + 1);
                node.children = Arrays.copyOf(node.children, node.children.length + 1);
                node.labels[node.labels.length - 1] = b;
                node.children[node.children.length - 1] = next;
            }
            node = next;
        }
        node.terminal = true;
    }

    /** The node after byte {@code b}, or null. */
    LiteralTrie child(int b) {
        for (int i = 0; i < labels.length; i++) {
            if ((labels[i] & 0xFF) == b) {
                return children[i];
            }
        }
        return null;
    }

    /** Whether a whole literal ends here. */
    boolean terminal() {
        return terminal;
    }

    boolean hasChildren() {
        return labels.length > 0;
    }

    /**
     * Reads byte {@code b} from this node on top of {@code below}: completes the value where a
     * literal ends, and goes on where a longer one continues (both, for enum values like 1 and 12).
     */
    void step(int b, FrameStack below, Successors out) {
        LiteralTrie next = child(b);
        if (next == null) {
            return;
        }
        if (next.terminal) {
            Frame.valueCompleted(below, out);
        }
        if (next.hasChildren()) {
            out.add(below.push(new LiteralFrame(next)));
        }
    }
}
