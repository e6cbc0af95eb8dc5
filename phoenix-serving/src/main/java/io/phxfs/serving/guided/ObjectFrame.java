package io.phxfs.serving.guided;

/**
 * An object's structure: braces, keys' surroundings, colons and commas, and whitespace between
 * them. The frame sits on top while reading structure, and below a key or value while waiting for
 * it ({@link #IN_KEY}, {@link #IN_VALUE}).
 *
 * @param shape the object's layout
 * @param phase where in the object: one of the constants below
 * @param next the first declared property that may still come
 * @param pending the property whose key or value is being read (-1: an additional one)
 * @param ws the length of the whitespace run so far
 */
record ObjectFrame(ObjectShape shape, int phase, int next, int pending, int ws) implements Frame {
    static final int AFTER_OPEN = 0;
    static final int AFTER_COMMA = 1;
    static final int IN_KEY = 2;
    static final int AFTER_KEY = 3;
    static final int IN_VALUE = 4;
    static final int AFTER_VALUE = 5;

    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (JsonWhitespace.is(b)) {
            if (ws < JsonWhitespace.MAX_RUN) {
                out.add(self.replaceHead(new ObjectFrame(shape, phase, next, pending, ws + 1)));
            }
            return;
        }
        FrameStack below = self.below();
        switch (phase) {
            case AFTER_OPEN, AFTER_COMMA -> {
                if (b == '"') {
                    shape.startKey(next, below, out);
                } else if (b == '}' && phase == AFTER_OPEN && shape.canClose(next)) {
                    Frame.valueCompleted(below, out);
                }
            }
            case AFTER_KEY -> {
                if (b == ':') {
                    ValueStartFrame.expect(shape.value(pending),
                            below.push(new ObjectFrame(shape, IN_VALUE, next, pending, 0)), out);
                }
            }
            case AFTER_VALUE -> {
                if (b == ',' && shape.keyPossible(next)) {
                    out.add(self.replaceHead(new ObjectFrame(shape, AFTER_COMMA, next, -1, 0)));
                } else if (b == '}' && shape.canClose(next)) {
                    Frame.valueCompleted(below, out);
                }
            }
            default -> throw new IllegalStateException("an object waiting for a value is never on top");
        }
    }

    @Override
    public Frame resume() {
        return switch (phase) {
            case IN_KEY -> new ObjectFrame(shape, AFTER_KEY, next, pending, 0);
            case IN_VALUE -> new ObjectFrame(shape, AFTER_VALUE, pending < 0 ? shape.declared() : pending + 1, -1, 0);
            default -> Frame.super.resume();
        };
    }
}
