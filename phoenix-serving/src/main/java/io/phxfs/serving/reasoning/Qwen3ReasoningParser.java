package io.phxfs.serving.reasoning;

/**
 * Qwen3's reasoning ({@code --reasoning-parser qwen3}): the model writes
 * {@code <think>...</think>} itself before its answer. Only an explicit block at the start
 * of the output is reasoning (a {@code <think>} further on is text); an output that does not
 * begin with {@code <think>} is all content, and one that opens the block and never closes it
 * (cut off) is all reasoning. With thinking turned
 * off ({@code enable_thinking: false}, where Qwen3's template puts an empty block in the
 * prompt) the whole output is content. Where the prompt itself ends with {@code <think>} (the
 * thinking models' templates), the output starts inside the block.
 */
public final class Qwen3ReasoningParser implements ReasoningParser {
    /** The parser. */
    public Qwen3ReasoningParser() {
    }

    @Override
    public String name() {
        return "qwen3";
    }

    @Override
    public ReasoningStream open(boolean thinking) {
        return new ReasoningStream(thinking ? ReasoningStream.Start.CONTENT_UNTIL_OPEN
                : ReasoningStream.Start.CONTENT_ONLY);
    }

    /**
     * As {@link #open(boolean)}, but where the prompt opened the block (the thinking models'
     * templates, Qwen3-*-Thinking-2507's and Qwen3.5's, end it with {@code <think>}) the output
     * is reasoning up to {@code </think>}, as vLLM's qwen3 parser takes such output.
     */
    @Override
    public ReasoningStream open(boolean thinking, boolean promptOpened) {
        return promptOpened ? new ReasoningStream(ReasoningStream.Start.REASONING) : open(thinking);
    }
}
