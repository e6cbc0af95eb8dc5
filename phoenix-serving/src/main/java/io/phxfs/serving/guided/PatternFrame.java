package io.phxfs.serving.guided;

/**
 * Inside a string whose content must match a {@code pattern} or a regular {@code format}, after
 * the opening quote: the content's bytes follow the language's automaton, which holds only
 * characters a JSON string carries unescaped; the closing quote comes where the content is a
 * whole string of it. A {@code maxLength} is kept by counting characters: a byte is allowed only
 * if some string of the language still ends within the bound after it (so no bound leaves the
 * output in a dead end).
 *
 * @param language the content's language (a {@code minLength} already intersected into it)
 * @param state the position in it
 * @param count the characters so far, counted only under a bound (0 without one, so that the
 *        states of unbounded strings recur)
 * @param maxChars the most characters, {@link StringShape#UNBOUNDED} for no bound
 */
record PatternFrame(ByteLanguage language, int state, int count, int maxChars) implements Frame {
    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (b == '"') {
            if (language.accepts(state)) {
                Frame.valueCompleted(self.below(), out);
            }
            return;
        }
        int next = language.step(state, b);
        if (next < 0) {
            return;
        }
        int c = count;
        if (maxChars != StringShape.UNBOUNDED) {
            c += ByteLanguage.startsCharacter(b) ? 1 : 0;
            if ((long) c + language.minChars(next) > maxChars) {
                return;
            }
        }
        out.add(next == state && c == count ? self : self.replaceHead(new PatternFrame(language, next, c, maxChars)));
    }

    /** A position as one long for {@link TokenTrie}'s walk: the automaton's state and the count. */
    static long pack(int state, int count) {
        return (long) state << 32 | count;
    }

    /**
     * {@link #step} on packed positions, for the trie's walk: the next position, -1 where the byte
     * cannot come, {@link TokenTrie#HANDOFF} for the closing quote (the matcher's to follow).
     */
    long stepPacked(long position, int b) {
        if (b == '"') {
            return TokenTrie.HANDOFF;
        }
        int s = (int) (position >>> 32);
        int c = (int) position;
        int next = language.step(s, b);
        if (next < 0) {
            return -1;
        }
        if (maxChars != StringShape.UNBOUNDED) {
            c += ByteLanguage.startsCharacter(b) ? 1 : 0;
            if ((long) c + language.minChars(next) > maxChars) {
                return -1;
            }
        }
        return pack(next, c);
    }
}
