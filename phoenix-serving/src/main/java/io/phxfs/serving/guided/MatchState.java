package io.phxfs.serving.guided;

import java.util.Arrays;

/**
 * Where an {@link OutputGrammar} stands after some bytes: the set of pushdown configurations
 * still alive (several where the schema leaves a choice open: {@code anyOf}, a list of types,
 * optional properties). Immutable, with equality and hash by value, so that states reached through
 * different bytes compare equal (inside a free string after {@code "ab"} and after {@code "cd"})
 * and can key a cache of token masks.
 */
public final class MatchState {
    /**
     * The most configurations a state may hold. Each byte costs a step of every configuration, and
     * a schema whose alternatives start alike and nest ({@code anyOf} of arrays of the same
     * {@code anyOf}...) doubles them at every level; past this many, a decode step would cost
     * seconds, so the output is refused rather than guided slowly.
     */
    public static final int MAX_ALTERNATIVES = 1024;
    private static final byte UNKNOWN = 0;
    private static final byte NO = 1;
    private static final byte YES = 2;

    private final FrameStack[] configs;
    private final int hash;
    // derived from configs, computed on first use; benign races compute the same value
    private byte accepting = UNKNOWN;
    private byte finished = UNKNOWN;
    private int plainRoom = Integer.MIN_VALUE; // not computed yet

    private MatchState(FrameStack[] configs) {
        this.configs = configs;
        int h = 0;
        for (FrameStack c : configs) {
            h += c.hashCode(); // order-independent: the configurations are a set
        }
        this.hash = h;
    }

    static MatchState initial(SchemaNode root) {
        if (root.alternatives().length == 0) {
            return new MatchState(new FrameStack[0]);
        }
        FrameStack bottom = new FrameStack(RootFrame.WAITING, null);
        return new MatchState(new FrameStack[] {bottom.push(new ValueStartFrame(root, 0))});
    }

    /** The state before an output that is text of {@code language}, with no JSON around it. */
    static MatchState initialText(ByteLanguage language) {
        return new MatchState(new FrameStack[] {new FrameStack(new TextFrame(language, language.start()), null)});
    }

    /**
     * The state after one more byte.
     *
     * @param b the byte, 0 to 255
     * @return the state after it, or null when no output matching the schema starts with the bytes
     *         so far followed by {@code b}
     * @throws IllegalArgumentException for a value outside 0..255
     * @throws IllegalStateException when more than {@link #MAX_ALTERNATIVES} configurations would
     *         be live after it: the schema is too ambiguous to guide
     */
    public MatchState advance(int b) {
        if ((b & ~0xFF) != 0) {
            throw new IllegalArgumentException("not a byte: " + b);
        }
        Successors out = new Successors();
        for (FrameStack c : configs) {
            c.head().step(b, c, out);
        }
        if (out.size() == 0) {
            return null;
        }
        if (out.size() > MAX_ALTERNATIVES) {
            throw new IllegalStateException("the schema is too ambiguous to guide: after this output " + out.size()
                    + " readings of it are live at once, more than " + MAX_ALTERNATIVES
                    + " (alternatives that start alike nest: anyOf, type lists, optional properties)");
        }
        return out.sameAs(configs) ? this : new MatchState(out.toArray());
    }

    /**
     * Whether the bytes so far are a complete value matching the schema (with any whitespace after it).
     *
     * @return true where the output may end
     */
    public boolean accepting() {
        if (accepting == UNKNOWN) {
            boolean any = false;
            for (FrameStack c : configs) {
                any |= c.head().acceptsEnd(c.below());
            }
            accepting = any ? YES : NO;
        }
        return accepting == YES;
    }

    /**
     * Whether the output is accepting and nothing but whitespace could follow: generation should end here.
     *
     * @return true where the value is complete and cannot be extended
     */
    public boolean finished() {
        if (finished == UNKNOWN) {
            boolean done = accepting();
            // whitespace after a whole JSON value changes nothing; in text it is text
            boolean text = false;
            for (FrameStack c : configs) {
                text |= c.head() instanceof TextFrame;
            }
            for (int b = 0; done && b < 256; b++) {
                done = (!text && JsonWhitespace.is(b)) || advance(b) == null;
            }
            finished = done ? YES : NO;
        }
        return finished == YES;
    }

    /**
     * How much plain string text (whole UTF-8 characters without quote, backslash or control
     * bytes: {@link PlainStringTokens}) this state reads while staying live. Where every live
     * configuration is inside a string's text, any plain text of at most this many characters
     * leads to a live state, and plain text of more characters to none; that lets
     * {@link GuidedVocabulary#allowed} answer plain tokens from a table instead of a walk.
     *
     * @return -1 when some configuration is not inside a string's text (in an escape, in the
     *         middle of a character, in a literal, outside strings); else the largest number of
     *         characters some configuration may still take, {@link Integer#MAX_VALUE} when
     *         unbounded
     */
    int plainStringRoom() {
        if (plainRoom == Integer.MIN_VALUE) {
            int room = configs.length == 0 ? -1 : 0;
            for (FrameStack c : configs) {
                int r = c.head().plainTextRoom();
                if (r < 0) {
                    room = -1;
                    break;
                }
                room = Math.max(room, r);
            }
            plainRoom = room;
        }
        return plainRoom;
    }

    /** The frame reading the next byte when there is one configuration, else null. */
    Frame onlyHead() {
        return configs.length == 1 ? configs[0].head() : null;
    }

    /** This state of one configuration with its head replaced by {@code head}. */
    MatchState withOnlyHead(Frame head) {
        return new MatchState(new FrameStack[] {configs[0].replaceHead(head)});
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof MatchState s) || s.hash != hash || s.configs.length != configs.length) {
            return false;
        }
        for (FrameStack c : configs) {
            if (!s.contains(c)) {
                return false;
            }
        }
        return true;
    }

    private boolean contains(FrameStack c) {
        for (FrameStack d : configs) {
            if (d.equals(c)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public int hashCode() {
        return hash;
    }

    /**
     * The live configurations, for debugging.
     *
     * @return a description of each configuration's stack, top first
     */
    @Override
    public String toString() {
        return "MatchState" + Arrays.toString(configs);
    }
}
