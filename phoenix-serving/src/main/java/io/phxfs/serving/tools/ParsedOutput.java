package io.phxfs.serving.tools;

import java.util.List;

/**
 * A whole output split into its tool calls and the text around them.
 *
 * @param content the text outside the calls, or null when there are calls and that text is
 *        blank (OpenAI's {@code content: null}); the whole text when there are no calls
 * @param calls the calls in order, empty when none
 */
public record ParsedOutput(String content, List<ToolCall> calls) {
    /** Copies the list. */
    public ParsedOutput {
        calls = List.copyOf(calls);
    }
}
