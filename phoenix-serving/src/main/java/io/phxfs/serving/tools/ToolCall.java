package io.phxfs.serving.tools;

import java.util.Objects;

/**
 * One function call found in a model's output, as OpenAI's API returns it.
 *
 * @param id the call's id ({@code call_...}), which the client sends back as the tool message's
 *        {@code tool_call_id}
 * @param name the function's name
 * @param arguments the arguments as a JSON object in text (what OpenAI's {@code function.arguments} carries)
 */
public record ToolCall(String id, String name, String arguments) {
    /**
     * Checks that no field is missing.
     *
     * @throws NullPointerException for a missing field
     */
    public ToolCall {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(arguments, "arguments");
    }
}
