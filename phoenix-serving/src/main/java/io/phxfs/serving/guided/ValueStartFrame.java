package io.phxfs.serving.guided;

/**
 * Before a value: reads the whitespace in front of it, then lets each alternative shape of the
 * schema try to start on the first byte.
 *
 * @param node the schema the value must match
 * @param ws the length of the whitespace run so far
 */
record ValueStartFrame(SchemaNode node, int ws) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (JsonWhitespace.is(b)) {
            if (ws < JsonWhitespace.MAX_RUN) {
                out.add(self.replaceHead(new ValueStartFrame(node, ws + 1)));
            }
            return;
        }
        start(node, b, self.below(), out);
    }

    /** Starts a value of {@code node} with its first byte {@code b} on top of {@code below}. */
    static void start(SchemaNode node, int b, FrameStack below, Successors out) {
        for (ValueShape shape : node.alternatives()) {
            shape.start(b, below, out);
        }
    }

    /** Expects a value of {@code node} (after whitespace) on top of {@code below}, unless none can match. */
    static void expect(SchemaNode node, FrameStack below, Successors out) {
        if (node.alternatives().length > 0) {
            out.add(below.push(new ValueStartFrame(node, 0)));
        }
    }

    @Override
    public String toString() {
        return "ValueStart(" + node.pointer() + ", ws " + ws + ")";
    }
}
