package io.phxfs.serving.reasoning;

/**
 * A whole output split into its reasoning and its answer.
 *
 * @param reasoning the text of the reasoning block (possibly empty), or null when the output
 *        has none
 * @param content the text outside the reasoning block, or null when there is a reasoning block
 *        and nothing else (as vLLM's); the whole text when there is no reasoning block
 */
public record ReasoningOutput(String reasoning, String content) {
}
