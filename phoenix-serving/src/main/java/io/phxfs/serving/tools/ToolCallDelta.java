package io.phxfs.serving.tools;

/** What a {@link ToolCallStream} releases: text for {@code content}, or a whole tool call. */
public sealed interface ToolCallDelta {
    /**
     * Text of the answer outside any tool call.
     *
     * @param text the text, never empty
     */
    record Content(String text) implements ToolCallDelta {
    }

    /**
     * A tool call, released whole once its text is complete and valid.
     *
     * @param index its place among the response's calls, from 0 (OpenAI's {@code tool_calls[].index})
     * @param call the call
     */
    record Call(int index, ToolCall call) implements ToolCallDelta {
    }
}
