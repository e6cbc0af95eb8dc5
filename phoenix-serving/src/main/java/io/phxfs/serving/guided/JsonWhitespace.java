package io.phxfs.serving.guided;

/** JSON's insignificant whitespace, and the cap on a run of it. */
final class JsonWhitespace {
    /**
     * The longest run of whitespace accepted between two tokens. Without a cap a model could emit
     * spaces or newlines forever while every step stays "valid"; 64 still fits the indentation of a
     * pretty-printed document about 30 levels deep.
     */
    static final int MAX_RUN = 64;

    private JsonWhitespace() {
    }

    /** Space, tab, newline or carriage return. */
    static boolean is(int b) {
        return b == ' ' || b == '\n' || b == '\r' || b == '\t';
    }
}
