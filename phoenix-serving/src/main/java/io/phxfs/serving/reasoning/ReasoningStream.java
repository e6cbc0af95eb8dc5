package io.phxfs.serving.reasoning;

import io.phxfs.serving.guided.ReasoningGate;

/**
 * One response's text split at its {@code <think>...</think>} block as it is generated: each
 * piece goes in, and what is settled comes out, text as soon as it cannot be the start of a
 * tag. The tags themselves never come out, even when split across pieces. There is at most
 * one block, and {@code <think>} opens it only at the start of the output (after ASCII
 * whitespace, which is dropped with it); after {@code </think>} all text is content. A response that ends inside the
 * block (no {@code </think>}, e.g. cut off by max_tokens) is reasoning to its end. Not
 * thread-safe; one per response.
 */
public final class ReasoningStream {
    static final String OPEN = "<think>";
    static final String CLOSE = "</think>";

    /** Where the text is: before the block, inside it, after it. */
    enum State { BEFORE, REASONING, CONTENT }

    /**
     * How the output begins.
     */
    enum Start {
        /** As content unless it begins with {@code <think>}, which opens the block (Qwen3). */
        CONTENT_UNTIL_OPEN,
        /** Inside the block, which the prompt opened; a leading {@code <think>} is dropped (DeepSeek-R1). */
        REASONING,
        /** All content: no block is looked for (thinking off). */
        CONTENT_ONLY
    }

    private final Start start;
    private State state;
    private final StringBuilder held = new StringBuilder();
    private boolean reasoned;
    /** Whether a leading {@code <think>} may still come (DeepSeek-R1). */
    private boolean leading;
    private boolean finished;

    ReasoningStream(Start start) {
        this.start = start;
        this.state = start == Start.CONTENT_ONLY ? State.CONTENT : start == Start.REASONING ? State.REASONING
                : State.BEFORE;
        this.reasoned = start == Start.REASONING;
        this.leading = start == Start.REASONING;
    }

    /**
     * Takes the next piece of generated text.
     *
     * @param piece the text, possibly empty
     * @return what it settles
     * @throws IllegalStateException after {@link #finish}
     */
    public ReasoningDelta add(String piece) {
        if (finished) {
            throw new IllegalStateException("the stream is finished");
        }
        held.append(piece);
        StringBuilder reasoning = new StringBuilder();
        StringBuilder content = new StringBuilder();
        while (step(reasoning, content)) {
            // each step moves text out of held or changes state
        }
        return delta(reasoning, content);
    }

    /**
     * Ends the text: what was held back (the start of a tag that never completed) is settled
     * as the text it is.
     *
     * @return the rest
     */
    public ReasoningDelta finish() {
        if (finished) {
            return ReasoningDelta.NONE;
        }
        finished = true;
        String rest = held.toString();
        held.setLength(0);
        return state == State.REASONING ? new ReasoningDelta(rest, "") : new ReasoningDelta("", rest);
    }

    /**
     * Where a guided output read by this stream starts to be guided: after the block (the schema
     * applies to the content, as vLLM guides a reasoning model's structured output).
     *
     * @return the gate, or null where the whole output is content (thinking off)
     */
    public ReasoningGate guideGate() {
        return switch (start) {
            case CONTENT_ONLY -> null;
            case REASONING -> ReasoningGate.inside(CLOSE);
            case CONTENT_UNTIL_OPEN -> ReasoningGate.mayOpen(OPEN, CLOSE);
        };
    }

    /**
     * Whether the text has a reasoning block (so far): always for a format whose prompt opens
     * it, else once {@code <think>} came.
     *
     * @return true when there is reasoning (possibly empty)
     */
    public boolean reasoned() {
        return reasoned;
    }

    /** One move; false when nothing more can be settled until more text comes. */
    private boolean step(StringBuilder reasoning, StringBuilder content) {
        switch (state) {
            case BEFORE -> {
                int open = leadingOpen();
                if (open < 0) {
                    return false;
                }
                held.delete(0, open);
                state = open > 0 ? State.REASONING : State.CONTENT;
                reasoned = open > 0;
                return true;
            }
            case REASONING -> {
                if (leading) {
                    // the model may write the <think> its prompt already opened: drop it
                    int open = leadingOpen();
                    if (open < 0) {
                        return false;
                    }
                    held.delete(0, open);
                    leading = false;
                    return true;
                }
                int i = held.indexOf(CLOSE);
                if (i >= 0) {
                    reasoning.append(held, 0, i);
                    held.delete(0, i + CLOSE.length());
                    state = State.CONTENT;
                    return true;
                }
                release(reasoning, CLOSE);
                return false;
            }
            default -> {
                content.append(held);
                held.setLength(0);
                return false;
            }
        }
    }

    /**
     * Whether the text begins with {@code <think>} (after whitespace): the length of that
     * whitespace and tag, 0 when it does not, -1 when it cannot tell yet.
     */
    private int leadingOpen() {
        int at = 0;
        while (at < held.length() && ReasoningGate.leadingSpace(held.charAt(at))) {
            at++;
        }
        int rest = held.length() - at;
        if (rest >= OPEN.length()) {
            return held.indexOf(OPEN, at) == at ? at + OPEN.length() : 0;
        }
        return OPEN.startsWith(held.substring(at)) && !finished ? -1 : 0;
    }

    /** Moves all held text to {@code to} but a tail that may be the start of {@code tag}. */
    private void release(StringBuilder to, String tag) {
        int keep = partialTag(held, tag);
        int cut = held.length() - keep;
        to.append(held, 0, cut);
        held.delete(0, cut);
    }

    /** The length of the longest tail of {@code s} that is a proper prefix of {@code tag}. */
    static int partialTag(CharSequence s, String tag) {
        for (int n = Math.min(tag.length() - 1, s.length()); n > 0; n--) {
            boolean match = true;
            for (int k = 0; k < n && match; k++) {
                match = s.charAt(s.length() - n + k) == tag.charAt(k);
            }
            if (match) {
                return n;
            }
        }
        return 0;
    }

    private static ReasoningDelta delta(CharSequence reasoning, CharSequence content) {
        return reasoning.isEmpty() && content.isEmpty() ? ReasoningDelta.NONE
                : new ReasoningDelta(reasoning.toString(), content.toString());
    }
}
