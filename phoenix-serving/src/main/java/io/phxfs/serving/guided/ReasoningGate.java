package io.phxfs.serving.guided;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Where a reasoning model's guided output starts to be guided: after its reasoning block, as
 * vLLM guides structured outputs when a {@code --reasoning-parser} is set. The model thinks in
 * free text; the schema applies from the byte after the closing tag ({@code </think>}), so that
 * the reasoning parser's content is the guided value. The gate reads the output's bytes as the
 * parser reads its text: a block the prompt opened is reasoning from the first byte; otherwise
 * the output either opens the block at its start (after whitespace) or is content, guided from
 * its first byte. Immutable; shared by the requests of a server.
 */
public final class ReasoningGate {
    private static final int MAX_TAG = 255;
    private final byte[] open;
    private final byte[] close;
    private final boolean inside;
    /** KMP's failure function of {@code close}: the longest proper border of each prefix. */
    private final int[] border;

    private ReasoningGate(byte[] open, byte[] close, boolean inside) {
        if (close.length == 0 || (open != null && open.length == 0)) {
            throw new IllegalArgumentException("reasoning gate: empty tag");
        }
        if (open != null && open.length > MAX_TAG) {
            // the guide packs the opening tag's progress into a byte
            throw new IllegalArgumentException("reasoning gate: opening tag of " + open.length + " bytes, more than " + MAX_TAG);
        }
        this.open = open;
        this.close = close;
        this.inside = inside;
        this.border = new int[close.length + 1];
        for (int i = 1, k = 0; i < close.length; i++) {
            while (k > 0 && close[i] != close[k]) {
                k = border[k];
            }
            if (close[i] == close[k]) {
                k++;
            }
            border[i + 1] = k;
        }
    }

    /**
     * A block the prompt opened: the output is reasoning up to {@code close}, guided after it.
     *
     * @param close the closing tag, e.g. {@code </think>}
     * @return the gate
     */
    public static ReasoningGate inside(String close) {
        return new ReasoningGate(null, utf8(close), true);
    }

    /**
     * A block the output may open: output that begins with {@code open} (after whitespace) is
     * reasoning up to {@code close} and guided after it; any other output is guided from its start.
     *
     * @param open the opening tag, e.g. {@code <think>}
     * @param close the closing tag, e.g. {@code </think>}
     * @return the gate
     */
    public static ReasoningGate mayOpen(String open, String close) {
        return new ReasoningGate(utf8(Objects.requireNonNull(open, "open")), utf8(close), false);
    }

    private static byte[] utf8(String tag) {
        return Objects.requireNonNull(tag, "tag").getBytes(StandardCharsets.UTF_8);
    }

    /** Whether the output starts inside the block. */
    boolean startsInside() {
        return inside;
    }

    /** The opening tag's bytes (shared), null when the prompt opened the block. */
    byte[] open() {
        return open;
    }

    /** The closing tag's bytes (shared). */
    byte[] close() {
        return close;
    }

    /**
     * How much of the closing tag the output ends with after byte {@code b}, given that it ended
     * with {@code matched} bytes of it before (KMP's step): {@link #closeLength()} when {@code b}
     * completes the tag.
     */
    int closeStep(int matched, int b) {
        int k = matched;
        while (k > 0 && (close[k] & 0xff) != b) {
            k = border[k];
        }
        return (close[k] & 0xff) == b ? k + 1 : 0;
    }

    /** The length of the closing tag in bytes. */
    int closeLength() {
        return close.length;
    }

    /** The next shorter border of the closing tag's first {@code k} bytes (0 when none). */
    int border(int k) {
        return border[k];
    }

    /**
     * Whether a character may come before the opening tag: ASCII whitespace. The reasoning
     * parser reads text by the same rule ({@code ReasoningStream}), so that the gate, which reads
     * bytes, and the parser, which reads characters, split an output at the same place.
     *
     * @param c a byte or a character
     * @return true for ASCII whitespace
     */
    public static boolean leadingSpace(int c) {
        return c < 0x80 && Character.isWhitespace(c);
    }

    @Override
    public String toString() {
        return (inside ? "inside" : "mayOpen " + new String(open, StandardCharsets.UTF_8)) + " until "
                + new String(close, StandardCharsets.UTF_8);
    }
}
