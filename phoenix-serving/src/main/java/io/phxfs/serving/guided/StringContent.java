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
    /** The widest length bound built into the automaton: each unit is a copy of a state. */
    static final int MAX_BOUND = RegexParser.MAX_REPEAT;

    private StringContent() {
    }

    /**
     * The byte language of the strings matching {@code pattern} with {@code min} to {@code max} characters.
     *
     * @param max the most characters, {@link StringShape#UNBOUNDED} for no bound
     * @throws IllegalArgumentException (an {@link UnsupportedPatternException} for the pattern's
     *         own faults) naming why it cannot be enforced
     */
    static ByteLanguage matching(String pattern, int min, int max) {
        Automaton matches = RegexParser.parse(pattern);
        int[][] unescaped = RegexParser.complement(new int[][] {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
        Automaton plain = Automata.makeCharClass(RegexParser.starts(unescaped), RegexParser.ends(unescaped));
        if (min > MAX_BOUND || (max != StringShape.UNBOUNDED && max > MAX_BOUND)) {
            throw new IllegalArgumentException("length bounds above " + MAX_BOUND + " beside a pattern are not enforced");
        }
        Automaton chars = max == StringShape.UNBOUNDED ? Operations.repeat(plain, min) : Operations.repeat(plain, min, max);
        return ByteLanguage.of(Operations.intersection(matches, chars),
                "the pattern with the characters a JSON string holds unescaped"
                        + (min > 0 || max != StringShape.UNBOUNDED ? " and its length bounds" : ""));
    }
}
