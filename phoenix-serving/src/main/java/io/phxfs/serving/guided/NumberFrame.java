package io.phxfs.serving.guided;

/**
 * Inside a number. A number has no closing byte: it ends when the next byte cannot continue it,
 * and that byte then belongs to the container (a comma, a bracket, whitespace), so a complete
 * number passes such a byte down to the frame below instead of completing eagerly. No byte both
 * continues a number and follows one, so this stays deterministic.
 *
 * @param shape the number's schema
 * @param phase the {@link NumberLexer} phase
 * @param length the bytes read so far
 */
record NumberFrame(NumberShape shape, int phase, int length) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        int next = NumberLexer.next(phase, b);
        if (next >= 0) {
            if ((!shape.integerOnly() || NumberLexer.integral(next)) && NumberLexer.fits(next, length + 1)) {
                out.add(self.replaceHead(new NumberFrame(shape, next, length + 1)));
            }
            return;
        }
        if (NumberLexer.complete(phase)) {
            FrameStack below = self.below();
            Frame container = below.head().resume();
            container.step(b, below.replaceHead(container), out);
        }
    }

    @Override
    public boolean acceptsEnd(FrameStack below) {
        return NumberLexer.complete(phase) && below.head().resume().acceptsEnd(below.below());
    }
}
