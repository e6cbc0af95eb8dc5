package io.phxfs.serving.reasoning;

import java.util.List;

/** The reasoning parsers by the names vLLM's {@code --reasoning-parser} gives them. */
public final class ReasoningParsers {
    private ReasoningParsers() {
    }

    /**
     * The names, in the order help lists them.
     *
     * @return deepseek_r1, qwen3
     */
    public static List<String> names() {
        return List.of("deepseek_r1", "qwen3");
    }

    /**
     * The parser of that name.
     *
     * @param name a name from {@link #names()}
     * @return a new parser
     * @throws IllegalArgumentException for another name (the message lists the names)
     */
    public static ReasoningParser byName(String name) {
        return switch (name) {
            case "deepseek_r1" -> new DeepSeekR1ReasoningParser();
            case "qwen3" -> new Qwen3ReasoningParser();
            default -> throw new IllegalArgumentException("unknown reasoning parser \"" + name + "\"; this server has "
                    + String.join(", ", names()));
        };
    }
}
