package io.phxfs.cli;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Byte sizes as people type them and as tables print them. The grammar, the same for every
 * size option: a whole number, then optionally a unit {@code k m g t} (any case), optionally
 * followed by {@code iB}: {@code 4096}, {@code 4k}, {@code 4K}, {@code 4KiB}, {@code 64m},
 * {@code 1GiB}; a plain {@code B} suffix is allowed on bare bytes ({@code 512B}). Units are
 * powers of 1024. {@code KB}, {@code MB}, ... are refused rather than guessed: elsewhere
 * (dd, disk vendors) they mean powers of 1000, and a benchmark size silently 2.4% off is
 * worse than an error.
 */
public final class Sizes {
    private Sizes() {}

    private static final Pattern SIZE = Pattern.compile("(\\d+)(?:([kmgtKMGT])((?i:ib))?|B)?");
    private static final Pattern DECIMAL_UNIT = Pattern.compile("\\d+[kmgtKMGT][bB]");
    private static final String HINT = "use a whole number of bytes or one with a unit: 4096, 4k, 64m, 1g, 4KiB";

    /**
     * A size as the CLI's options take it.
     *
     * @param text bytes, or a number with a unit of powers of 1024 (4k, 64m, 1g, 4KiB)
     * @return the bytes
     * @throws IllegalArgumentException naming the text and the forms accepted
     */
    public static long parse(String text) {
        String s = text.strip();
        Matcher m = SIZE.matcher(s);
        if (!m.matches()) {
            if (DECIMAL_UNIT.matcher(s).matches()) {
                String unit = s.substring(s.length() - 2).toUpperCase(Locale.ROOT);
                throw new IllegalArgumentException("'" + text + "' is ambiguous (" + unit
                        + " can mean powers of 1000 or of 1024): write "
                        + s.substring(0, s.length() - 1) + " or " + s.substring(0, s.length() - 1).toUpperCase(Locale.ROOT)
                        + "iB for powers of 1024");
            }
            throw new IllegalArgumentException(text.isEmpty() ? "empty size; " + HINT : "not a size: '" + text + "'; " + HINT);
        }
        int shift = m.group(2) == null ? 0 : switch (Character.toLowerCase(m.group(2).charAt(0))) {
            case 'k' -> 10;
            case 'm' -> 20;
            case 'g' -> 30;
            default -> 40;
        };
        long v;
        try {
            v = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            v = -1; // more digits than a long holds
        }
        if (v <= 0 || v > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("size out of range: '" + text + "' (must be > 0 and < 8 EiB)");
        }
        return v << shift;
    }

    static String format(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) return (bytes >> 30) + " GiB";
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) return (bytes >> 20) + " MiB";
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) return (bytes >> 10) + " KiB";
        return bytes + " B";
    }

    /**
     * The converter of every size option ({@code converter = Sizes.Converter.class}), so each
     * accepts the same grammar and a bad value fails while the command line is parsed, with
     * picocli naming the option.
     */
    static final class Converter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
