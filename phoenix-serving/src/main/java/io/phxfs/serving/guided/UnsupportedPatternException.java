package io.phxfs.serving.guided;

/**
 * A regular expression guided decoding cannot enforce: a syntax error, or a construct no finite
 * automaton enforces or that ECMA-262 and Python read differently (see {@link TextGrammar#regex}).
 */
public final class UnsupportedPatternException extends IllegalArgumentException {
    /** The exception's serialized form version. */
    private static final long serialVersionUID = 1L;

    /** Where in the pattern, in code points. */
    private final int index;

    /**
     * Creates the exception.
     *
     * @param pattern the pattern
     * @param index where in it the problem is, in code points
     * @param reason what it is
     */
    UnsupportedPatternException(String pattern, int index, String reason) {
        super("the regular expression " + quote(pattern) + " cannot be enforced: " + reason + " at character " + index);
        this.index = index;
    }

    private static String quote(String pattern) {
        String p = pattern.length() > 200 ? pattern.substring(0, 200) + "..." : pattern;
        return "\"" + p.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /**
     * Where in the pattern the problem is.
     *
     * @return the index of the code point at which it was found
     */
    public int index() {
        return index;
    }
}
