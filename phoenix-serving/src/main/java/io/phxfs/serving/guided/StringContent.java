package io.phxfs.serving.guided;

import org.apache.lucene.util.automaton.Automata;
import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.Operations;

/**
 * The content of a JSON string under a {@code pattern}: the strings the pattern matches whole,
 * made only of characters a JSON string carries unescaped (no quote, backslash or control
 * character; a model writes those escaped, and an escape's bytes are not the character it
 * stands for), with as many characters as the length bounds allow.
 */
final class StringContent {
    /** The largest minLength built into the automaton: each unit is a copy of a state. */
    static final int MAX_BOUND = RegexParser.MAX_REPEAT;

    private StringContent() {
    }

    /**
     * The byte language of the strings matching {@code pattern} with at least {@code min}
     * characters (the maximum is the frame's to count: {@link PatternFrame}).
     *
     * @throws IllegalArgumentException (an {@link UnsupportedPatternException} for the pattern's
     *         own faults) naming why it cannot be enforced
     */
    static ByteLanguage matching(String pattern, int min) {
        return language(RegexParser.parse(pattern), min, "the pattern");
    }

    /** As {@link #matching}, for an automaton already built. */
    static ByteLanguage language(Automaton matches, int min, String what) {
        int[][] unescaped = RegexParser.complement(new int[][] {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
        Automaton plain = Automata.makeCharClass(RegexParser.starts(unescaped), RegexParser.ends(unescaped));
        if (min > MAX_BOUND) {
            throw new IllegalArgumentException("a minLength above " + MAX_BOUND + " beside a pattern or format is not enforced");
        }
        return ByteLanguage.of(Operations.intersection(matches, Operations.repeat(plain, min)),
                what + " with the characters a JSON string holds unescaped" + (min > 0 ? " and its minLength" : ""));
    }
}
