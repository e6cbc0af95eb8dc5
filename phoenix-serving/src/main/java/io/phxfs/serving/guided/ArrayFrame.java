package io.phxfs.serving.guided;

/**
 * An array's structure: brackets, commas and whitespace between them; below an item while waiting
 * for it ({@link #IN_ITEM}).
 *
 * @param shape the array's layout
 * @param phase where in the array: one of the constants below
 * @param count the items read so far (capped where further counts make no difference)
 * @param ws the length of the whitespace run so far
 */
record ArrayFrame(ArrayShape shape, int phase, int count, int ws) implements Frame {
    static final int AFTER_OPEN = 0;
    static final int IN_ITEM = 1;
    static final int AFTER_ITEM = 2;

    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (JsonWhitespace.is(b)) {
            if (ws < JsonWhitespace.MAX_RUN) {
                out.add(self.replaceHead(new ArrayFrame(shape, phase, count, ws + 1)));
            }
            return;
        }
        FrameStack below = self.below();
        if (b == ']') {
            if (count >= shape.minItems) {
                Frame.valueCompleted(below, out);
            }
            return;
        }
        SchemaNode item = shape.item(count);
        if (item == null) {
            return;
        }
        if (phase == AFTER_OPEN) {
            ValueStartFrame.start(item, b, below.push(new ArrayFrame(shape, IN_ITEM, count, 0)), out);
        } else if (phase == AFTER_ITEM && b == ',') {
            ValueStartFrame.expect(item, below.push(new ArrayFrame(shape, IN_ITEM, count, 0)), out);
        }
    }

    @Override
    public Frame resume() {
        if (phase != IN_ITEM) {
            return Frame.super.resume();
        }
        return new ArrayFrame(shape, AFTER_ITEM, shape.countAfter(count), 0);
    }
}
