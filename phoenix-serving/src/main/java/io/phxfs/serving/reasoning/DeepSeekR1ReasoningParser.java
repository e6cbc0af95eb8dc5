package io.phxfs.serving.reasoning;

/**
 * DeepSeek-R1's reasoning ({@code --reasoning-parser deepseek_r1}, also for QwQ and the
 * R1 distills): the chat template already opens {@code <think>} in the prompt, so the output
 * is {@code reasoning</think>answer}; a {@code <think>} the model writes again at the start is
 * dropped. Everything before {@code </think>} is reasoning, and an output without
 * {@code </think>} is all reasoning, as vLLM's parser has it. {@code enable_thinking} plays no
 * part (the R1 templates do not read it).
 */
public final class DeepSeekR1ReasoningParser implements ReasoningParser {
    /** The parser. */
    public DeepSeekR1ReasoningParser() {
    }

    @Override
    public String name() {
        return "deepseek_r1";
    }

    @Override
    public ReasoningStream open(boolean thinking) {
        return new ReasoningStream(ReasoningStream.Start.REASONING);
    }
}
