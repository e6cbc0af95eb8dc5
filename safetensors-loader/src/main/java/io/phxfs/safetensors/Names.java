package io.phxfs.safetensors;

/** Quoting of names taken from files, for messages: bounded length, no control characters. */
final class Names {
    /** Longer names are cut: an adversarial name must not turn one message into megabytes. */
    private static final int MAX_QUOTED = 200;

    private Names() {
    }

    /** {@code 'name'}, escaped and shortened. */
    static String quote(String name) {
        String s = name.length() > MAX_QUOTED
                ? name.substring(0, MAX_QUOTED) + "...(" + name.length() + " chars)"
                : name;
        return "'" + escapeControls(s) + "'";
    }

    static String tensor(String name) {
        return "tensor " + quote(name);
    }

    /**
     * Replaces control characters (newlines above all) and invisible format characters (a
     * byte order mark, bidirectional overrides that reorder what a terminal shows) with
     * {@code \\uXXXX}.
     */
    static String escapeControls(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean bad = Character.isISOControl(c) || c == '\u2028' || c == '\u2029'
                    || Character.getType(c) == Character.FORMAT
                    || Character.isSurrogate(c) && !pairedAt(s, i);
            if (bad) {
                if (b == null) {
                    b = new StringBuilder(s.length() + 16).append(s, 0, i);
                }
                b.append(String.format("\\u%04x", (int) c));
            } else if (b != null) {
                b.append(c);
            }
        }
        return b == null ? s : b.toString();
    }

    private static boolean pairedAt(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }

    /** True when every surrogate is part of a pair: the string can be written back as UTF-8. */
    static boolean wellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (Character.isSurrogate(s.charAt(i)) && !pairedAt(s, i)) {
                return false;
            }
        }
        return true;
    }
}
