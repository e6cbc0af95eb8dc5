package io.phxfs.serving.guided;

/**
 * Inside a string whose content must match a {@code pattern} (with its length bounds, if any),
 * after the opening quote: the content's bytes follow the pattern's automaton, which holds only
 * characters a JSON string carries unescaped; the closing quote comes where the content matches.
 *
 * @param language the content's language
 * @param state the position in it
 */
record PatternFrame(ByteLanguage language, int state) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (b == '"') {
            if (language.accepts(state)) {
                Frame.valueCompleted(self.below(), out);
            }
            return;
        }
        int next = language.step(state, b);
        if (next >= 0) {
            out.add(next == state ? self : self.replaceHead(new PatternFrame(language, next)));
        }
    }
}
