package io.phxfs.serving.tools;

import java.util.function.Supplier;

/**
 * vLLM's {@code hermes}: each call is <code>&lt;tool_call&gt;{"name": ..., "arguments": {...}}&lt;/tool_call&gt;</code>,
 * anywhere in the text and as many as the model writes (Hermes 2 Pro and 3, Qwen2.5, Qwen3:
 * their chat templates tell the model so). The text outside the blocks is the content. A
 * block whose JSON is not a call stays in the content verbatim, tags included (vLLM would
 * return the whole output as content); an unclosed block at the end is a call when its JSON
 * is complete, as vLLM takes it.
 */
public final class HermesToolParser implements ToolCallParser {
    static final String OPEN = "<tool_call>";
    static final String CLOSE = "</tool_call>";

    private final Supplier<String> ids;

    /** With OpenAI-shaped ids. */
    public HermesToolParser() {
        this(ToolCallIds.OPENAI);
    }

    /**
     * With ids from {@code ids}.
     *
     * @param ids makes each call's id
     */
    public HermesToolParser(Supplier<String> ids) {
        this.ids = ids;
    }

    @Override
    public String name() {
        return "hermes";
    }

    /**
     * {@code <tool_call>} is a special token in Hermes 2 Pro's vocabulary.
     *
     * @return true
     */
    @Override
    public boolean needsSpecialTokens() {
        return true;
    }

    @Override
    public ToolCallStream open() {
        return new ToolCallStream(ids) {
            private final StringBuilder buf = new StringBuilder();
            private boolean inBlock;

            @Override
            protected void accept(String piece) {
                buf.append(piece);
                for (;;) {
                    if (!inBlock) {
                        int at = buf.indexOf(OPEN);
                        if (at < 0) {
                            int keep = partialMarker(buf, OPEN);
                            content(buf.substring(0, buf.length() - keep));
                            buf.delete(0, buf.length() - keep);
                            return;
                        }
                        content(buf.substring(0, at));
                        buf.delete(0, at + OPEN.length());
                        inBlock = true;
                    } else {
                        int at = buf.indexOf(CLOSE);
                        if (at < 0) {
                            return;
                        }
                        String body = buf.substring(0, at);
                        buf.delete(0, at + CLOSE.length());
                        inBlock = false;
                        block(body, true);
                    }
                }
            }

            @Override
            protected void end() {
                if (inBlock) {
                    block(buf.toString(), false);
                } else {
                    content(buf);
                }
                buf.setLength(0);
            }

            private void block(String body, boolean closed) {
                CallJson.Parsed c = CallJson.call(CallJson.value(body), "arguments");
                if (c != null) {
                    call(c.name(), c.arguments());
                } else {
                    content(OPEN + body + (closed ? CLOSE : ""));
                }
            }
        };
    }
}
