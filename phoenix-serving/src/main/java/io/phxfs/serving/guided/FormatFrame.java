package io.phxfs.serving.guided;

/**
 * Inside a string of a {@link StringFormat}, after the opening quote: the closing quote comes only
 * once the content is a whole string of the format.
 *
 * @param format the format
 * @param state the position in the format's automaton
 */
record FormatFrame(StringFormat format, int state) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (b == '"') {
            if (format.complete(state)) {
                Frame.valueCompleted(self.below(), out);
            }
            return;
        }
        int next = format.next(state, b);
        if (next >= 0) {
            out.add(next == state ? self : self.replaceHead(new FormatFrame(format, next)));
        }
    }
}
