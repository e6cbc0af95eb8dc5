package io.phxfs.serving.text;

/**
 * transformers' {@code clean_up_tokenization}, which decode applies when tokenizer_config.json
 * sets {@code clean_up_tokenization_spaces}: a chain of replacements that drop the space before
 * punctuation and English contractions. Its streaming form holds text back only where a later
 * piece could complete a pattern, so that the pieces add up to the cleanup of the whole text.
 */
final class SpaceCleanup {
    private static final String[][] REPLACEMENTS = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    /** Every pattern starts with a space and is at most this long. */
    private static final int LONGEST = 4;

    private final StringBuilder pending = new StringBuilder();
    /** The characters just before {@link #pending}, already cleaned up and emitted. */
    private final StringBuilder before = new StringBuilder();

    static String apply(String text) {
        String out = text;
        for (String[] r : REPLACEMENTS) {
            out = out.replace(r[0], r[1]);
        }
        return out;
    }

    /**
     * Adds raw text; returns the cleaned text that no later input can change. A cut is final
     * where none of the {@value #LONGEST} - 1 characters before it is a space: no pattern can
     * then span it, and Python's left-to-right replacements act on each side alone.
     */
    String push(String raw) {
        pending.append(raw);
        int cut = lastSafeCut();
        if (cut <= 0) {
            return "";
        }
        String segment = pending.substring(0, cut);
        pending.delete(0, cut);
        before.append(segment);
        if (before.length() > LONGEST) {
            before.delete(0, before.length() - LONGEST);
        }
        return apply(segment);
    }

    /** The rest, at the end of the text. */
    String flush() {
        String rest = apply(pending.toString());
        pending.setLength(0);
        return rest;
    }

    private int lastSafeCut() {
        for (int cut = pending.length(); cut > 0; cut--) {
            if (!Character.isHighSurrogate(pending.charAt(cut - 1)) && !spaceWithin(cut)) {
                return cut;
            }
        }
        return 0;
    }

    /** Whether one of the LONGEST - 1 characters before position {@code cut} of pending is a space. */
    private boolean spaceWithin(int cut) {
        for (int back = 1; back < LONGEST; back++) {
            int i = cut - back;
            char c = i >= 0 ? pending.charAt(i) : before.length() + i >= 0 ? before.charAt(before.length() + i) : 'x';
            if (c == ' ') {
                return true;
            }
        }
        return false;
    }
}
