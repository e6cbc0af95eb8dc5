package io.phxfs.cli;

import java.util.Locale;

/** Byte sizes as people type them ("4k", "64KiB", "1g") and as tables print them. */
final class Sizes {
    private Sizes() {}

    static long parse(String text) {
        String s = text.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty size");
        }
        long mult = switch (s.charAt(s.length() - 1)) {
            case 'k' -> 1L << 10;
            case 'm' -> 1L << 20;
            case 'g' -> 1L << 30;
            case 't' -> 1L << 40;
            default -> 1;
        };
        String digits = mult == 1 ? s : s.substring(0, s.length() - 1);
        long v;
        try {
            v = Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a size: '" + text + "' (use e.g. 4k, 64m, 4g)");
        }
        if (v <= 0 || v > Long.MAX_VALUE / mult) {
            throw new IllegalArgumentException("size out of range: '" + text + "'");
        }
        return v * mult;
    }

    static String format(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) return (bytes >> 30) + " GiB";
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) return (bytes >> 20) + " MiB";
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) return (bytes >> 10) + " KiB";
        return bytes + " B";
    }
}
