package io.phxfs.serving.guided;

/**
 * The byte automaton of a JSON number, {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}, as
 * small int phases so that number frames stay two ints.
 */
final class NumberLexer {
    static final int START = 0;
    static final int MINUS = 1;
    static final int ZERO = 2;
    static final int INT = 3;
    static final int DOT = 4;
    static final int FRACTION = 5;
    static final int E = 6;
    static final int EXPONENT_SIGN = 7;
    static final int EXPONENT = 8;

    /**
     * The longest number accepted, in bytes. Without a cap a model could emit digits forever;
     * 32 bytes hold any double Jackson or Python print and any 64-bit integer.
     */
    static final int MAX_LENGTH = 32;

    private NumberLexer() {
    }

    /** The phase after byte {@code b}, or -1 when {@code b} cannot continue the number. */
    static int next(int phase, int b) {
        boolean digit = b >= '0' && b <= '9';
        return switch (phase) {
            case START -> b == '-' ? MINUS : b == '0' ? ZERO : digit ? INT : -1;
            case MINUS -> b == '0' ? ZERO : digit ? INT : -1;
            case ZERO -> b == '.' ? DOT : b == 'e' || b == 'E' ? E : -1;
            case INT -> digit ? INT : b == '.' ? DOT : b == 'e' || b == 'E' ? E : -1;
            case DOT -> digit ? FRACTION : -1;
            case FRACTION -> digit ? FRACTION : b == 'e' || b == 'E' ? E : -1;
            case E -> b == '+' || b == '-' ? EXPONENT_SIGN : digit ? EXPONENT : -1;
            case EXPONENT_SIGN, EXPONENT -> digit ? EXPONENT : -1;
            default -> -1;
        };
    }

    /** Whether the bytes read so far form a whole number. */
    static boolean complete(int phase) {
        return phase == ZERO || phase == INT || phase == FRACTION || phase == EXPONENT;
    }

    /** Whether the phase belongs to an integer (no fraction, no exponent). */
    static boolean integral(int phase) {
        return phase == MINUS || phase == ZERO || phase == INT;
    }

    /**
     * Whether a number may be in {@code phase} after {@code length} bytes: within the cap, and with
     * room left for the digit that an incomplete phase still needs, so that a live state can
     * always be completed.
     */
    static boolean fits(int phase, int length) {
        return complete(phase) ? length <= MAX_LENGTH : length < MAX_LENGTH;
    }
}
