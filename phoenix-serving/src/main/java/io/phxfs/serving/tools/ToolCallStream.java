package io.phxfs.serving.tools;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * One response's text parsed for tool calls as it is generated: each piece goes in, and what
 * is settled comes out, content as soon as it cannot be the start of a call, a call once its
 * text is complete and valid. A call is released whole rather than argument by argument, so
 * that text which turns out not to be a valid call can still be returned as content: a
 * streamed response never holds a call the whole response would not. Not thread-safe; one
 * per response.
 *
 * <p>Whitespace before any other content is held back: when the response has calls and no
 * other text, its content is null, as OpenAI's; when it has none, the whitespace is its content.
 */
public abstract class ToolCallStream {
    private final Supplier<String> ids;
    private final StringBuilder heldBlank = new StringBuilder();
    private boolean contentReleased;
    private int calls;
    private List<ToolCallDelta> out = new ArrayList<>();
    private boolean finished;

    /**
     * A stream whose calls get ids from {@code ids}.
     *
     * @param ids makes each call's id
     */
    protected ToolCallStream(Supplier<String> ids) {
        this.ids = ids;
    }

    /**
     * Takes the next piece of generated text.
     *
     * @param piece the text, possibly empty
     * @return what it settles, in order; often nothing
     * @throws IllegalStateException after {@link #finish}
     */
    public final List<ToolCallDelta> add(String piece) {
        if (finished) {
            throw new IllegalStateException("the stream is finished");
        }
        if (!piece.isEmpty()) {
            accept(piece);
        }
        return drain();
    }

    /**
     * Ends the text: what was held back is settled.
     *
     * @return the rest, in order
     */
    public final List<ToolCallDelta> finish() {
        if (!finished) {
            finished = true;
            end();
            if (calls == 0 && !heldBlank.isEmpty()) {
                out.add(new ToolCallDelta.Content(heldBlank.toString()));
                heldBlank.setLength(0);
            }
        }
        return drain();
    }

    /**
     * How many calls have been released.
     *
     * @return the count
     */
    public final int callCount() {
        return calls;
    }

    private List<ToolCallDelta> drain() {
        List<ToolCallDelta> d = out;
        out = new ArrayList<>();
        return d;
    }

    /**
     * The format's state machine takes a non-empty piece and calls {@link #content} and
     * {@link #call} for what it settles.
     *
     * @param piece the text
     */
    protected abstract void accept(String piece);

    /** The text has ended: the format settles everything it held. */
    protected abstract void end();

    /**
     * Releases text of the answer.
     *
     * @param text the text; nothing when empty
     */
    protected final void content(CharSequence text) {
        if (text.isEmpty()) {
            return;
        }
        String t = text.toString();
        if (!contentReleased) {
            if (t.isBlank()) {
                heldBlank.append(t);
                return;
            }
            contentReleased = true;
            t = heldBlank + t;
            heldBlank.setLength(0);
        }
        out.add(new ToolCallDelta.Content(t));
    }

    /**
     * Releases a call.
     *
     * @param name the function's name
     * @param arguments its arguments as JSON text
     */
    protected final void call(String name, String arguments) {
        out.add(new ToolCallDelta.Call(calls++, new ToolCall(ids.get(), name, arguments)));
    }

    /**
     * How many characters at the end of {@code text} could begin {@code marker} (a proper prefix
     * of it), to be held back until the next piece says.
     *
     * @param text the text so far
     * @param marker the marker looked for
     * @return 0 to marker.length() - 1
     */
    protected static int partialMarker(CharSequence text, String marker) {
        int max = Math.min(marker.length() - 1, text.length());
        for (int n = max; n > 0; n--) {
            boolean match = true;
            for (int i = 0; i < n && match; i++) {
                match = text.charAt(text.length() - n + i) == marker.charAt(i);
            }
            if (match) {
                return n;
            }
        }
        return 0;
    }
}
