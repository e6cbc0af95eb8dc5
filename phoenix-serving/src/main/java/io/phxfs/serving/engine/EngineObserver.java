package io.phxfs.serving.engine;

/**
 * Timings and counts as they happen, for metrics (the API server's Prometheus series); every
 * method is called on the engine's thread and must return at once. All times in seconds.
 */
public interface EngineObserver {
    /** Observes nothing. */
    EngineObserver NONE = new EngineObserver() {
    };

    /**
     * A request left the waiting queue.
     *
     * @param queueSeconds time it waited
     */
    default void scheduled(double queueSeconds) {
    }

    /**
     * The prefix cache was asked about a prompt.
     *
     * @param queriedTokens the prompt's tokens looked up
     * @param hitTokens of those, the tokens found
     */
    default void prefixCache(int queriedTokens, int hitTokens) {
    }

    /**
     * A request's first token.
     *
     * @param ttftSeconds time from arrival to the first token
     * @param prefillSeconds time its prefill (retrieve included) took
     */
    default void firstToken(double ttftSeconds, double prefillSeconds) {
    }

    /**
     * A later token.
     *
     * @param interTokenSeconds time since the request's previous token
     */
    default void token(double interTokenSeconds) {
    }

    /**
     * A request ended.
     *
     * @param reason why
     * @param e2eSeconds from arrival to the end
     * @param decodeSeconds from the first token to the end
     * @param usage its tokens
     */
    default void finished(FinishReason reason, double e2eSeconds, double decodeSeconds, Usage usage) {
    }
}
