package io.phxfs.serving.reasoning;

/**
 * A model family's way of marking its reasoning in the generated text (vLLM's
 * {@code --reasoning-parser}): the text is split into the reasoning and the answer (content).
 * The whole-text parse is the streaming parse fed the text in one piece, so that a streamed
 * response always amounts to the same reasoning and content as the whole one.
 */
public interface ReasoningParser {
    /**
     * The name {@code --reasoning-parser} takes (vLLM's).
     *
     * @return the name
     */
    String name();

    /**
     * A parse of one response's text as it comes.
     *
     * @param thinking false when the request turned thinking off ({@code chat_template_kwargs}
     *        {@code enable_thinking: false}), for formats whose template honours it
     * @return a new stream
     */
    ReasoningStream open(boolean thinking);

    /**
     * A parse of one response's text as it comes, knowing whether the rendered prompt already
     * opened the block (ends with {@code <think>}, as the templates of Qwen3's thinking models
     * and DeepSeek-R1 do): then the output starts inside it.
     *
     * @param thinking as for {@link #open(boolean)}
     * @param promptOpened whether the prompt ends with {@code <think>} (see {@link #promptOpens})
     * @return a new stream
     */
    default ReasoningStream open(boolean thinking, boolean promptOpened) {
        return open(thinking);
    }

    /**
     * Whether a rendered prompt leaves a reasoning block open for the model to continue.
     *
     * @param prompt the prompt as the chat template rendered it
     * @return true when it ends with {@code <think>} (trailing whitespace aside)
     */
    static boolean promptOpens(String prompt) {
        return prompt.stripTrailing().endsWith(ReasoningStream.OPEN);
    }

    /**
     * Parses a whole output.
     *
     * @param text the generated text
     * @param thinking as for {@link #open}
     * @return the reasoning and the content
     */
    default ReasoningOutput parse(String text, boolean thinking) {
        return parse(text, thinking, false);
    }

    /**
     * Parses a whole output.
     *
     * @param text the generated text
     * @param thinking as for {@link #open(boolean)}
     * @param promptOpened as for {@link #open(boolean, boolean)}
     * @return the reasoning and the content
     */
    default ReasoningOutput parse(String text, boolean thinking, boolean promptOpened) {
        ReasoningStream s = open(thinking, promptOpened);
        ReasoningDelta a = s.add(text);
        ReasoningDelta b = s.finish();
        String reasoning = a.reasoning() + b.reasoning();
        String content = a.content() + b.content();
        if (!s.reasoned()) {
            return new ReasoningOutput(null, content);
        }
        return new ReasoningOutput(reasoning, content.isEmpty() ? null : content);
    }
}
