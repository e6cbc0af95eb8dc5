package io.phxfs.serving.guided;

import java.nio.charset.StandardCharsets;

/** Feeding bytes to a matcher in tests. */
final class Bytes {
    private Bytes() {
    }

    /** The state after all of {@code bytes}, or null where some byte was refused. */
    static MatchState feed(MatchState s, byte[] bytes) {
        for (byte b : bytes) {
            if (s == null) {
                return null;
            }
            s = s.advance(b & 0xFF);
        }
        return s;
    }

    static MatchState feed(JsonSchemaMatcher m, String text) {
        return feed(m.start(), text.getBytes(StandardCharsets.UTF_8));
    }

    /** Whether the matcher reads all of {@code bytes} and ends accepting. */
    static boolean accepts(JsonSchemaMatcher m, byte[] bytes) {
        MatchState s = feed(m.start(), bytes);
        return s != null && s.accepting();
    }

    static boolean accepts(JsonSchemaMatcher m, String text) {
        return accepts(m, text.getBytes(StandardCharsets.UTF_8));
    }

    /** The index of the first refused byte, or -1 when all are read. */
    static int refusedAt(JsonSchemaMatcher m, byte[] bytes) {
        MatchState s = m.start();
        for (int i = 0; i < bytes.length; i++) {
            s = s.advance(bytes[i] & 0xFF);
            if (s == null) {
                return i;
            }
        }
        return -1;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
