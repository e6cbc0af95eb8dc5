package io.phxfs.serving.engine;

import java.util.List;

/**
 * How a request's tokens are chosen and when it stops, with OpenAI's meanings: greedy when
 * {@code temperature} is 0, else sampling from the softmax of the logits divided by the
 * temperature, kept to the {@code topK} most likely tokens (0: all) and to the smallest set
 * whose probability reaches {@code topP}; the same {@code seed} gives the same tokens.
 *
 * @param temperature 0 for greedy, else in (0, 2]
 * @param topP in (0, 1]
 * @param topK 0 for no limit, else at least 1
 * @param seed the random seed, or null for a fresh one per request
 * @param maxTokens the most tokens to generate, at least 1
 * @param stop strings that end the text where they first appear (they are not returned); at most 4
 * @param ignoreEos whether to go on past the model's end-of-sequence tokens
 */
public record SamplingParams(double temperature, double topP, int topK, Long seed, int maxTokens, List<String> stop,
                             boolean ignoreEos) {
    /** OpenAI's limit on stop sequences. */
    public static final int MAX_STOP = 4;

    /**
     * Checks the values; the messages name the field as OpenAI's API does.
     *
     * @throws IllegalArgumentException for a value out of range
     */
    public SamplingParams {
        if (!(temperature >= 0 && temperature <= 2)) {
            throw new IllegalArgumentException("temperature: " + temperature + " is not in [0, 2]");
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p: " + topP + " is not in (0, 1]");
        }
        if (topK < 0) {
            throw new IllegalArgumentException("top_k: " + topK + " is negative (0 means no limit)");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max_tokens: " + maxTokens + " must be at least 1");
        }
        stop = stop == null ? List.of() : List.copyOf(stop);
        if (stop.size() > MAX_STOP) {
            throw new IllegalArgumentException("stop: " + stop.size() + " sequences, at most " + MAX_STOP);
        }
        for (String s : stop) {
            if (s.isEmpty()) {
                throw new IllegalArgumentException("stop: an empty string never matches anything useful");
            }
        }
    }

    /**
     * Greedy decoding of up to {@code maxTokens} tokens.
     *
     * @param maxTokens the most tokens to generate
     * @return the parameters
     */
    public static SamplingParams greedy(int maxTokens) {
        return new SamplingParams(0, 1, 0, null, maxTokens, List.of(), false);
    }

    /**
     * Whether tokens are chosen by argmax.
     *
     * @return true for temperature 0
     */
    public boolean isGreedy() {
        return temperature == 0;
    }
}
