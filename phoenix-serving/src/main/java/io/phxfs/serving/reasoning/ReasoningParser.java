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
     * Parses a whole output.
     *
     * @param text the generated text
     * @param thinking as for {@link #open}
     * @return the reasoning and the content
     */
    default ReasoningOutput parse(String text, boolean thinking) {
        ReasoningStream s = open(thinking);
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
