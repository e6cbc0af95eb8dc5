package io.phxfs.serving.tools;

import java.util.ArrayList;
import java.util.List;

/**
 * A model family's format of tool calls in its generated text (vLLM's {@code --tool-call-parser}).
 * The whole-text parse is the streaming parse fed the text in one piece, so that a streamed
 * response always amounts to the same content and calls as the whole one.
 */
public interface ToolCallParser {
    /**
     * The name {@code --tool-call-parser} takes (vLLM's).
     *
     * @return the name
     */
    String name();

    /**
     * Whether the format's markers are special tokens, which the detokenizer must then keep
     * (vLLM's parsers set {@code skip_special_tokens=False} for the same reason).
     *
     * @return true when generation must not skip special tokens
     */
    boolean needsSpecialTokens();

    /**
     * A parse of one response's text as it comes.
     *
     * @return a new stream
     */
    ToolCallStream open();

    /**
     * Parses a whole output.
     *
     * @param text the generated text
     * @return the content and calls
     */
    default ParsedOutput parse(String text) {
        ToolCallStream s = open();
        List<ToolCallDelta> deltas = new ArrayList<>(s.add(text));
        deltas.addAll(s.finish());
        StringBuilder content = new StringBuilder();
        List<ToolCall> calls = new ArrayList<>();
        for (ToolCallDelta d : deltas) {
            switch (d) {
                case ToolCallDelta.Content c -> content.append(c.text());
                case ToolCallDelta.Call c -> calls.add(c.call());
            }
        }
        return new ParsedOutput(content.isEmpty() && !calls.isEmpty() ? null : content.toString(), calls);
    }
}
