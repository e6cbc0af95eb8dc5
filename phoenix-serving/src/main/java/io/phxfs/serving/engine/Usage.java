package io.phxfs.serving.engine;

/**
 * What a request consumed, as OpenAI's {@code usage} reports it.
 *
 * @param promptTokens tokens of the prompt
 * @param completionTokens tokens generated
 * @param cachedTokens prompt tokens whose KV came from the prefix cache instead of a prefill
 */
public record Usage(int promptTokens, int completionTokens, int cachedTokens) {
    /**
     * Prompt and completion together.
     *
     * @return the total
     */
    public int totalTokens() {
        return promptTokens + completionTokens;
    }
}
