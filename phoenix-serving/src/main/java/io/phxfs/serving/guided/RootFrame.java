package io.phxfs.serving.guided;

/**
 * The bottom of every stack: first waiting under the top-level value, then ({@code ended}) reading
 * the whitespace that may follow it, where the input is accepted.
 *
 * @param ended whether the top-level value is complete
 * @param ws the length of the trailing whitespace run so far
 */
record RootFrame(boolean ended, int ws) implements Frame {
    static final RootFrame WAITING = new RootFrame(false, 0);
    private static final RootFrame ENDED = new RootFrame(true, 0);

    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (ended && JsonWhitespace.is(b) && ws < JsonWhitespace.MAX_RUN) {
            out.add(self.replaceHead(new RootFrame(true, ws + 1)));
        }
    }

    @Override
    public Frame resume() {
        return ENDED;
    }

    @Override
    public boolean acceptsEnd(FrameStack below) {
        return ended;
    }
}
