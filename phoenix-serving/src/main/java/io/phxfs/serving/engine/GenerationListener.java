package io.phxfs.serving.engine;

/**
 * Receives a request's progress, on the engine's thread: implementations hand the work off
 * (write to a socket from a virtual thread, say) rather than block. Exactly one of
 * {@link #onFinish} and {@link #onError} is called, last.
 */
public interface GenerationListener {
    /**
     * The prompt is in the model's cache: prefilled, partly from the prefix cache.
     *
     * @param promptTokens tokens of the prompt
     * @param cachedTokens of those, the tokens whose KV came from the prefix cache
     */
    default void onStart(int promptTokens, int cachedTokens) {
    }

    /**
     * New text. Pieces never split a UTF-8 character, hold back what may be the beginning of a
     * stop string, and concatenate to exactly the completion's text.
     *
     * @param piece the new text, possibly empty when a token added no complete character yet
     * @param tokenIds the tokens generated since the last call
     */
    void onText(String piece, int[] tokenIds);

    /**
     * The generation ended.
     *
     * @param reason why
     * @param usage the tokens it took
     */
    void onFinish(FinishReason reason, Usage usage);

    /**
     * The generation failed; nothing more follows.
     *
     * @param error what went wrong
     */
    void onError(Throwable error);
}
