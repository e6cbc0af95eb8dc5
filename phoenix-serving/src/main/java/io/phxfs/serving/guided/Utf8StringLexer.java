package io.phxfs.serving.guided;

/**
 * The byte automaton of a JSON string's content after its opening quote: UTF-8 validated byte by
 * byte (no overlong forms, no encoded surrogates, nothing past U+10FFFF), no control bytes, and
 * the escapes {@code \" \\ \/ \b \f \n \r \t} and <code>&#92;uXXXX</code>, where an escaped high surrogate
 * must be followed by an escaped low one (the pair counts as one character, as the code point it
 * encodes) and a lone low surrogate is refused.
 *
 * <p>{@link #step} returns the next mode with flags, packed in an int, so that string frames stay
 * a few ints and stepping allocates nothing.
 */
final class Utf8StringLexer {
    static final int TEXT = 0;
    private static final int ESCAPE = 1;
    private static final int U0 = 2; // after backslash-u
    private static final int U1 = 3; // one hex digit read
    private static final int U2 = 4;
    private static final int U3 = 5;
    private static final int U_D = 6; // backslash-u then d/D: the next digit says whether it is a surrogate
    private static final int HIGH2 = 7; // backslash-u D8..DB read, two more hex digits
    private static final int HIGH3 = 8;
    private static final int LOW_BACKSLASH = 9; // a high surrogate read: its low half must follow
    private static final int LOW_U = 10;
    private static final int LOW_D = 11;
    private static final int LOW_C_TO_F = 12;
    private static final int LOW3 = 13;
    private static final int LOW4 = 14;
    private static final int CONT1 = 15; // one continuation byte to come
    private static final int CONT2 = 16;
    private static final int CONT3 = 17;
    private static final int AFTER_E0 = 18; // A0..BF then one more (not overlong)
    private static final int AFTER_ED = 19; // 80..9F then one more (no surrogates)
    private static final int AFTER_F0 = 20; // 90..BF then two more (not overlong)
    private static final int AFTER_F4 = 21; // 80..8F then two more (not past U+10FFFF)

    /** Flag in a step's result: the byte starts a new character (counted against min/maxLength). */
    static final int STARTS_CHAR = 1 << 8;
    /** Flag in a step's result: the byte is the closing quote. */
    static final int CLOSES = 1 << 9;
    /** Masks the next mode out of a step's result. */
    static final int MODE_MASK = 0xFF;

    private Utf8StringLexer() {
    }

    /**
     * Reads byte {@code b} in {@code mode}.
     *
     * @param escapes whether backslash escapes are allowed at all
     * @return the next mode, or'ed with {@link #STARTS_CHAR} or {@link #CLOSES}; -1 when the byte
     *         cannot continue the string
     */
    static int step(int mode, int b, boolean escapes) {
        boolean cont = b >= 0x80 && b <= 0xBF;
        return switch (mode) {
            case TEXT -> text(b, escapes);
            case ESCAPE -> b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r'
                    || b == 't' ? TEXT : b == 'u' ? U0 : -1;
            case U0 -> b == 'd' || b == 'D' ? U_D : hex(b) ? U1 : -1;
            case U1 -> hex(b) ? U2 : -1;
            case U2 -> hex(b) ? U3 : -1;
            case U3 -> hex(b) ? TEXT : -1;
            case U_D -> b >= '0' && b <= '7' ? U2 : b == '8' || b == '9' || letter(b, 'a', 'b') ? HIGH2 : -1;
            case HIGH2 -> hex(b) ? HIGH3 : -1;
            case HIGH3 -> hex(b) ? LOW_BACKSLASH : -1;
            case LOW_BACKSLASH -> b == '\\' ? LOW_U : -1;
            case LOW_U -> b == 'u' ? LOW_D : -1;
            case LOW_D -> b == 'd' || b == 'D' ? LOW_C_TO_F : -1;
            case LOW_C_TO_F -> letter(b, 'c', 'f') ? LOW3 : -1;
            case LOW3 -> hex(b) ? LOW4 : -1;
            case LOW4 -> hex(b) ? TEXT : -1;
            case CONT1 -> cont ? TEXT : -1;
            case CONT2 -> cont ? CONT1 : -1;
            case CONT3 -> cont ? CONT2 : -1;
            case AFTER_E0 -> b >= 0xA0 && b <= 0xBF ? CONT1 : -1;
            case AFTER_ED -> b >= 0x80 && b <= 0x9F ? CONT1 : -1;
            case AFTER_F0 -> b >= 0x90 && b <= 0xBF ? CONT2 : -1;
            case AFTER_F4 -> b >= 0x80 && b <= 0x8F ? CONT2 : -1;
            default -> -1;
        };
    }

    private static int text(int b, boolean escapes) {
        if (b == '"') {
            return TEXT | CLOSES;
        }
        if (b == '\\') {
            return escapes ? ESCAPE | STARTS_CHAR : -1;
        }
        if (b < 0x20) {
            return -1; // control characters must be escaped
        }
        if (b < 0x80) {
            return TEXT | STARTS_CHAR;
        }
        int next;
        if (b >= 0xC2 && b <= 0xDF) {
            next = CONT1;
        } else if (b == 0xE0) {
            next = AFTER_E0;
        } else if (b == 0xED) {
            next = AFTER_ED;
        } else if (b >= 0xE1 && b <= 0xEF) {
            next = CONT2;
        } else if (b == 0xF0) {
            next = AFTER_F0;
        } else if (b >= 0xF1 && b <= 0xF3) {
            next = CONT3;
        } else if (b == 0xF4) {
            next = AFTER_F4;
        } else {
            return -1; // a continuation byte, an overlong lead (C0, C1) or past U+10FFFF (F5..FF)
        }
        return next | STARTS_CHAR;
    }

    private static boolean hex(int b) {
        return (b >= '0' && b <= '9') || letter(b, 'a', 'f');
    }

    /** Whether {@code b} is a letter from {@code lo} to {@code hi} (lower case), in either case. */
    private static boolean letter(int b, char lo, char hi) {
        int lower = b | 0x20; // ASCII letters differ from their lower case in bit 5 only
        return lower >= lo && lower <= hi && b >= 'A';
    }
}
