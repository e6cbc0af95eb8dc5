package io.phxfs.serving.reasoning;

/**
 * What one piece of generated text settles: reasoning, then content (a piece that closes the
 * reasoning block has both). Neither is null; either may be empty, both when the piece is
 * held back (it may be the start of a tag).
 *
 * @param reasoning new reasoning text
 * @param content new answer text, which follows the reasoning
 */
public record ReasoningDelta(String reasoning, String content) {
    /** Nothing settled. */
    public static final ReasoningDelta NONE = new ReasoningDelta("", "");

    /**
     * Whether both parts are empty.
     *
     * @return true when the delta settles nothing
     */
    public boolean isEmpty() {
        return reasoning.isEmpty() && content.isEmpty();
    }
}
