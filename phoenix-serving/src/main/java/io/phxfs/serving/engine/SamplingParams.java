package io.phxfs.serving.engine;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How a request's tokens are chosen and when it stops, with OpenAI's and vLLM's meanings: greedy
 * when {@code temperature} is 0, else sampling from the softmax of the logits divided by the
 * temperature, kept to the {@code topK} most likely tokens (0: all), to the smallest set whose
 * probability reaches {@code topP}, and to the tokens at least {@code minP} times as likely as the
 * most likely one; the same {@code seed} gives the same tokens. Before the choice (greedy too) the
 * logits get {@code logitBias} added and the penalties applied, as vLLM applies them:
 * {@code repetitionPenalty} divides the positive logits (and multiplies the negative ones) of
 * every token in the prompt or the output so far, {@code frequencyPenalty} is subtracted once per
 * time a token came in the output, {@code presencePenalty} once if it came at all.
 *
 * @param temperature 0 for greedy, else in (0, 2]
 * @param topP in (0, 1]
 * @param topK 0 for no limit, else at least 1
 * @param seed the random seed, or null for a fresh one per request
 * @param maxTokens the most tokens to generate, at least 1
 * @param stop strings that end the text where they first appear (returned only with
 *        {@code includeStopStrInOutput}); at most 4
 * @param ignoreEos whether to go on past the model's end-of-sequence tokens
 * @param minP in [0, 1], 0 for none
 * @param presencePenalty in [-2, 2]
 * @param frequencyPenalty in [-2, 2]
 * @param repetitionPenalty greater than 0, 1 for none
 * @param logitBias token id to a bias in [-100, 100] added to its logit
 * @param minTokens tokens generated before an end-of-sequence token, a stop token or a stop
 *        string may end the generation (those are kept from being chosen meanwhile), at most
 *        {@code maxTokens}
 * @param stopTokenIds tokens that end the generation besides the model's end-of-sequence ones
 *        (even with {@code ignoreEos})
 * @param includeStopStrInOutput whether the stop string that ended the text is part of it
 * @param skipSpecialTokens whether special tokens are left out of the text
 */
public record SamplingParams(double temperature, double topP, int topK, Long seed, int maxTokens, List<String> stop,
                             boolean ignoreEos, double minP, double presencePenalty, double frequencyPenalty,
                             double repetitionPenalty, Map<Integer, Double> logitBias, int minTokens,
                             List<Integer> stopTokenIds, boolean includeStopStrInOutput, boolean skipSpecialTokens) {
    /** OpenAI's limit on stop sequences. */
    public static final int MAX_STOP = 4;

    /**
     * Checks the values; the messages name the field as OpenAI's API (or vLLM's) does.
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
        if (!(minP >= 0 && minP <= 1)) {
            throw new IllegalArgumentException("min_p: " + minP + " is not in [0, 1]");
        }
        if (!(presencePenalty >= -2 && presencePenalty <= 2)) {
            throw new IllegalArgumentException("presence_penalty: " + presencePenalty + " is not in [-2, 2]");
        }
        if (!(frequencyPenalty >= -2 && frequencyPenalty <= 2)) {
            throw new IllegalArgumentException("frequency_penalty: " + frequencyPenalty + " is not in [-2, 2]");
        }
        if (!(repetitionPenalty > 0 && Double.isFinite(repetitionPenalty))) {
            throw new IllegalArgumentException("repetition_penalty: " + repetitionPenalty
                    + " must be greater than 0 (1 means none)");
        }
        logitBias = logitBias == null ? Map.of() : java.util.Collections.unmodifiableMap(new TreeMap<>(logitBias));
        for (Map.Entry<Integer, Double> e : logitBias.entrySet()) {
            if (e.getKey() < 0) {
                throw new IllegalArgumentException("logit_bias: token id " + e.getKey() + " is negative");
            }
            if (!(e.getValue() >= -100 && e.getValue() <= 100)) {
                throw new IllegalArgumentException("logit_bias: the bias of token " + e.getKey() + ", " + e.getValue()
                        + ", is not in [-100, 100]");
            }
        }
        if (minTokens < 0 || minTokens > maxTokens) {
            throw new IllegalArgumentException("min_tokens: " + minTokens + " is not in [0, max_tokens] ([0, "
                    + maxTokens + "])");
        }
        stopTokenIds = stopTokenIds == null ? List.of() : List.copyOf(stopTokenIds);
        for (int id : stopTokenIds) {
            if (id < 0) {
                throw new IllegalArgumentException("stop_token_ids: token id " + id + " is negative");
            }
        }
    }

    /**
     * The parameters with none of the penalties, biases or extra stops: OpenAI's original set.
     *
     * @param temperature 0 for greedy, else in (0, 2]
     * @param topP in (0, 1]
     * @param topK 0 for no limit
     * @param seed the random seed, or null
     * @param maxTokens the most tokens to generate
     * @param stop the stop strings
     * @param ignoreEos whether to go on past end-of-sequence tokens
     */
    public SamplingParams(double temperature, double topP, int topK, Long seed, int maxTokens, List<String> stop,
                          boolean ignoreEos) {
        this(temperature, topP, topK, seed, maxTokens, stop, ignoreEos, 0, 0, 0, 1, Map.of(), 0, List.of(), false,
                true);
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
     * These parameters with another {@code minP}.
     *
     * @param p in [0, 1]
     * @return the parameters
     */
    public SamplingParams withMinP(double p) {
        return new SamplingParams(temperature, topP, topK, seed, maxTokens, stop, ignoreEos, p, presencePenalty,
                frequencyPenalty, repetitionPenalty, logitBias, minTokens, stopTokenIds, includeStopStrInOutput,
                skipSpecialTokens);
    }

    /**
     * These parameters with other penalties and biases.
     *
     * @param presence the presence penalty
     * @param frequency the frequency penalty
     * @param repetition the repetition penalty
     * @param bias token id to logit bias
     * @return the parameters
     */
    public SamplingParams withPenalties(double presence, double frequency, double repetition, Map<Integer, Double> bias) {
        return new SamplingParams(temperature, topP, topK, seed, maxTokens, stop, ignoreEos, minP, presence, frequency,
                repetition, bias, minTokens, stopTokenIds, includeStopStrInOutput, skipSpecialTokens);
    }

    /**
     * These parameters with other stopping rules.
     *
     * @param min the tokens generated before anything but max_tokens ends it
     * @param tokenIds the stop tokens
     * @param includeStop whether the stop string is returned
     * @param skipSpecial whether special tokens are left out of the text
     * @return the parameters
     */
    public SamplingParams withStopping(int min, List<Integer> tokenIds, boolean includeStop, boolean skipSpecial) {
        return new SamplingParams(temperature, topP, topK, seed, maxTokens, stop, ignoreEos, minP, presencePenalty,
                frequencyPenalty, repetitionPenalty, logitBias, min, tokenIds, includeStop, skipSpecial);
    }

    /**
     * Whether tokens are chosen by argmax.
     *
     * @return true for temperature 0
     */
    public boolean isGreedy() {
        return temperature == 0;
    }

    /**
     * Whether the logits are changed before the choice.
     *
     * @return true when a penalty or a bias is set
     */
    public boolean adjustsLogits() {
        return presencePenalty != 0 || frequencyPenalty != 0 || repetitionPenalty != 1 || !logitBias.isEmpty();
    }
}
