package io.phxfs.serving.engine;

/** Why a generation ended, with the words of OpenAI's {@code finish_reason}. */
public enum FinishReason {
    /** An end-of-sequence token or a stop string. */
    STOP("stop"),
    /** {@code max_tokens}, or the model's context, reached. */
    LENGTH("length"),
    /** The client went away or cancelled. */
    CANCELLED("cancelled");

    private final String wire;

    FinishReason(String wire) {
        this.wire = wire;
    }

    /**
     * The value of {@code finish_reason}.
     *
     * @return "stop", "length" or "cancelled"
     */
    public String wire() {
        return wire;
    }
}
