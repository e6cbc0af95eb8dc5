package io.phxfs.serving.guided;

/**
 * Inside a literal (an enum or const value, true, false, null, a declared property's key).
 *
 * @param node where in the literal trie the bytes read so far lead
 */
record LiteralFrame(LiteralTrie node) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        node.step(b, self.below(), out);
    }
}
