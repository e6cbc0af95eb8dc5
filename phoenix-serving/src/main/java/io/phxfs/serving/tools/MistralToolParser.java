package io.phxfs.serving.tools;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * vLLM's {@code mistral}: the special token {@code [TOOL_CALLS]} and then the calls to the end
 * of the output, either as one JSON list <code>[{"name": ..., "arguments": {...}}, ...]</code>
 * (Mistral 7B Instruct v0.3, tokenizer v3) or as {@code name[ARGS]{...}} after each
 * {@code [TOOL_CALLS]} (tokenizer v11 and later). The text before the first marker is the
 * content. When what follows the marker is not wholly calls, the output from the marker on
 * stays content: calls are all or nothing, so they are released at the end of the output.
 * Ids are 9 letters and digits, which Mistral's templates require of {@code tool_call_id}.
 */
public final class MistralToolParser implements ToolCallParser {
    static final String MARKER = "[TOOL_CALLS]";
    private static final Pattern NAMED = Pattern.compile("\\s*([A-Za-z0-9_.-]+)\\[ARGS\\](.*)", Pattern.DOTALL);

    private final Supplier<String> ids;

    /** With Mistral-shaped ids. */
    public MistralToolParser() {
        this(ToolCallIds.MISTRAL);
    }

    /**
     * With ids from {@code ids}.
     *
     * @param ids makes each call's id
     */
    public MistralToolParser(Supplier<String> ids) {
        this.ids = ids;
    }

    @Override
    public String name() {
        return "mistral";
    }

    /**
     * {@code [TOOL_CALLS]} is a control token, which decoding skips by default.
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
            private boolean inCalls;

            @Override
            protected void accept(String piece) {
                buf.append(piece);
                if (inCalls) {
                    return;
                }
                int at = buf.indexOf(MARKER);
                if (at < 0) {
                    int keep = partialMarker(buf, MARKER);
                    content(buf.substring(0, buf.length() - keep));
                    buf.delete(0, buf.length() - keep);
                    return;
                }
                content(buf.substring(0, at));
                buf.delete(0, at + MARKER.length());
                inCalls = true;
            }

            @Override
            protected void end() {
                if (!inCalls) {
                    content(buf);
                    return;
                }
                List<CallJson.Parsed> calls = MistralToolParser.calls(buf.toString());
                if (calls == null) {
                    content(MARKER + buf);
                    return;
                }
                for (CallJson.Parsed c : calls) {
                    call(c.name(), c.arguments());
                }
            }
        };
    }

    /** The calls after the first marker, or null when that text is not wholly calls. */
    static List<CallJson.Parsed> calls(String text) {
        List<CallJson.Parsed> out = new ArrayList<>();
        String[] parts = text.split(Pattern.quote(MARKER), -1);
        if (parts.length == 1 && !NAMED.matcher(text).matches()) {
            JsonNode v = CallJson.value(text);
            if (v == null) {
                return null;
            }
            List<JsonNode> items = new ArrayList<>();
            if (v.isArray()) {
                v.forEach(items::add);
            } else {
                items.add(v);
            }
            for (JsonNode item : items) {
                CallJson.Parsed c = CallJson.call(item, "arguments");
                if (c == null) {
                    return null;
                }
                out.add(c);
            }
            return out.isEmpty() ? null : out;
        }
        for (String part : parts) {
            Matcher m = NAMED.matcher(part);
            if (!m.matches()) {
                return null;
            }
            JsonNode args = CallJson.value(m.group(2));
            if (args == null || !args.isObject()) {
                return null;
            }
            out.add(new CallJson.Parsed(m.group(1), CallJson.dumps(args)));
        }
        return out;
    }
}
