package io.phxfs.serving.tools;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * vLLM's {@code llama3_json}: Llama 3.1, 3.2 and 3.3's JSON tool calling, where the whole
 * output is the call <code>{"name": ..., "parameters": {...}}</code> ({@code arguments} is taken
 * too, first where both are there, as vLLM takes it), possibly after {@code <|python_tag|>}, and several calls are separated by {@code ;}.
 * An output that is not wholly calls is content, as in vLLM: an answer that merely begins
 * with a JSON example is not a call. So an output that begins with <code>{</code> or the tag
 * is held back to its end; any other streams as content at once.
 */
public final class Llama3JsonToolParser implements ToolCallParser {
    static final String PYTHON_TAG = "<|python_tag|>";

    private final Supplier<String> ids;

    /** With OpenAI-shaped ids. */
    public Llama3JsonToolParser() {
        this(ToolCallIds.OPENAI);
    }

    /**
     * With ids from {@code ids}.
     *
     * @param ids makes each call's id
     */
    public Llama3JsonToolParser(Supplier<String> ids) {
        this.ids = ids;
    }

    @Override
    public String name() {
        return "llama3_json";
    }

    /**
     * No: the JSON is plain text; {@code <|python_tag|>}, a special token, is skipped like the
     * others (as in vLLM), and taken when a tokenizer marks it as ordinary text.
     *
     * @return false
     */
    @Override
    public boolean needsSpecialTokens() {
        return false;
    }

    private enum State { START, CALLS, TEXT }

    @Override
    public ToolCallStream open() {
        return new ToolCallStream(ids) {
            private final StringBuilder buf = new StringBuilder();
            private State state = State.START;

            @Override
            protected void accept(String piece) {
                if (state == State.TEXT) {
                    content(piece);
                    return;
                }
                buf.append(piece);
                if (state == State.CALLS) {
                    return;
                }
                String s = buf.toString().stripLeading();
                if (s.isEmpty() || PYTHON_TAG.startsWith(s) && s.length() < PYTHON_TAG.length()) {
                    return; // could still become a call
                }
                if (s.startsWith("{") || s.startsWith(PYTHON_TAG)) {
                    state = State.CALLS;
                    return;
                }
                state = State.TEXT;
                content(buf);
                buf.setLength(0);
            }

            @Override
            protected void end() {
                List<CallJson.Parsed> calls = state == State.CALLS ? Llama3JsonToolParser.calls(buf.toString()) : null;
                if (calls == null) {
                    content(buf);
                    return;
                }
                for (CallJson.Parsed c : calls) {
                    call(c.name(), c.arguments());
                }
            }
        };
    }

    /** The calls, or null when the text is not wholly calls separated by semicolons. */
    static List<CallJson.Parsed> calls(String text) {
        String s = text.strip();
        if (s.startsWith(PYTHON_TAG)) {
            s = s.substring(PYTHON_TAG.length());
        }
        List<CallJson.Parsed> out = new ArrayList<>();
        int at = skipSpace(s, 0);
        while (true) {
            if (at >= s.length() || s.charAt(at) != '{') {
                return null;
            }
            CallJson.Span v = CallJson.valueAt(s, at);
            if (v == null) {
                return null;
            }
            CallJson.Parsed c = CallJson.call(v.value(), "arguments", "parameters");
            if (c == null) {
                return null;
            }
            out.add(c);
            at = skipSpace(s, v.end());
            if (at == s.length()) {
                return out;
            }
            if (s.charAt(at) != ';') {
                return null;
            }
            at = skipSpace(s, at + 1);
        }
    }

    private static int skipSpace(String s, int at) {
        while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
            at++;
        }
        return at;
    }
}
