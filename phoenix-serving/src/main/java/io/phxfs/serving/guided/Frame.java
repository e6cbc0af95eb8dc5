package io.phxfs.serving.guided;

/**
 * One level of the matcher's pushdown stack: on top, the sub-automaton reading the current token
 * (a string, a number, a literal, the structure of an object or array); below, the containers
 * waiting for the value above them to finish. Frames are immutable values (records) whose schema
 * parts compare by identity, so equal positions in the same schema are equal frames.
 */
sealed interface Frame permits ValueStartFrame, StringFrame, FormatFrame, PatternFrame, NumberFrame, IntegerRangeFrame, LiteralFrame,
        ObjectFrame, ArrayFrame, RootFrame, TextFrame {
    /**
     * Reads byte {@code b} with this frame on top of {@code self}, adding every configuration it
     * can lead to (none when the byte cannot continue).
     */
    void step(int b, FrameStack self, Successors out);

    /** This container's next phase once the value it was waiting for is complete. */
    default Frame resume() {
        throw new IllegalStateException(this + " does not wait for a value");
    }

    /** Whether the input may end with this frame on top of {@code below}. */
    default boolean acceptsEnd(FrameStack below) {
        return false;
    }

    /**
     * How many characters of plain string text (see {@link PlainStringTokens}) this frame, on top,
     * reads while staying live: -1 when it is not inside a string's text, {@link Integer#MAX_VALUE}
     * when the string has no length left to bound.
     */
    default int plainTextRoom() {
        return -1;
    }

    /** The value on top of {@code below} has just been completed: hand control back to its container. */
    static void valueCompleted(FrameStack below, Successors out) {
        out.add(below.replaceHead(below.head().resume()));
    }
}
