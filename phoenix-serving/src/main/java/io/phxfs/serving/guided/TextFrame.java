package io.phxfs.serving.guided;

/**
 * The whole output as text of a regular language ({@link TextGrammar}): no JSON around it, and
 * no whitespace after it but what the language itself holds.
 *
 * @param language the output's language
 * @param state the position in it
 */
record TextFrame(ByteLanguage language, int state) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        int next = language.step(state, b);
        if (next >= 0) {
            out.add(next == state ? self : self.replaceHead(new TextFrame(language, next)));
        }
    }

    @Override
    public boolean acceptsEnd(FrameStack below) {
        return language.accepts(state);
    }
}
