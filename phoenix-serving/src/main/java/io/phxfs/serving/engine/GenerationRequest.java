package io.phxfs.serving.engine;

import io.phxfs.serving.guided.OutputGrammar;
import io.phxfs.serving.guided.ReasoningGate;
import java.util.Objects;

/**
 * One prompt to continue.
 *
 * @param id the request's id, for logs and metrics
 * @param promptIds the prompt as token ids, at least one
 * @param sampling how to choose tokens and when to stop
 * @param cacheSalt mixed into the prefix-cache keys (vLLM's {@code cache_salt}): prompts with
 *        different salts never share cached KV; null or empty for none
 * @param guide the language the output must belong to (structured outputs: a JSON Schema, a regular
 *        expression, a list of choices), or null for free text
 * @param reasoning where a reasoning model's guided output starts to be guided (after its
 *        reasoning block), or null to guide it from its first token; ignored without a guide
 */
public record GenerationRequest(String id, int[] promptIds, SamplingParams sampling, String cacheSalt,
                                OutputGrammar guide, ReasoningGate reasoning) {
    /**
     * A request guided from its first token, or for free text.
     *
     * @param id the request's id
     * @param promptIds the prompt
     * @param sampling how to choose tokens and when to stop
     * @param cacheSalt the prefix-cache salt, or null
     * @param guide the JSON Schema the output must match, or null for free text
     */
    public GenerationRequest(String id, int[] promptIds, SamplingParams sampling, String cacheSalt,
                             OutputGrammar guide) {
        this(id, promptIds, sampling, cacheSalt, guide, null);
    }

    /**
     * A request for free text.
     *
     * @param id the request's id
     * @param promptIds the prompt
     * @param sampling how to choose tokens and when to stop
     * @param cacheSalt the prefix-cache salt, or null
     */
    public GenerationRequest(String id, int[] promptIds, SamplingParams sampling, String cacheSalt) {
        this(id, promptIds, sampling, cacheSalt, null, null);
    }

    /**
     * Checks the fields.
     *
     * @throws IllegalArgumentException for an empty prompt
     * @throws NullPointerException for a missing id, prompt or sampling
     */
    public GenerationRequest {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(sampling, "sampling");
        promptIds = Objects.requireNonNull(promptIds, "promptIds").clone();
        if (promptIds.length == 0) {
            throw new IllegalArgumentException("prompt: empty; at least one token is needed");
        }
    }
}
