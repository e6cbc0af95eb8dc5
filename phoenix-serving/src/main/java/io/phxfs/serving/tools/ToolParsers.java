package io.phxfs.serving.tools;

import java.util.List;

/** The parsers by the names vLLM's {@code --tool-call-parser} gives them. */
public final class ToolParsers {
    private ToolParsers() {
    }

    /**
     * The names, in the order help lists them.
     *
     * @return hermes, llama3_json, mistral
     */
    public static List<String> names() {
        return List.of("hermes", "llama3_json", "mistral");
    }

    /**
     * The parser of that name.
     *
     * @param name a name from {@link #names()}
     * @return a new parser
     * @throws IllegalArgumentException for another name (the message lists the names)
     */
    public static ToolCallParser byName(String name) {
        return switch (name) {
            case "hermes" -> new HermesToolParser();
            case "llama3_json" -> new Llama3JsonToolParser();
            case "mistral" -> new MistralToolParser();
            default -> throw new IllegalArgumentException("unknown tool call parser \"" + name + "\"; this server has "
                    + String.join(", ", names()));
        };
    }
}
