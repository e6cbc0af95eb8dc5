package io.phxfs.safetensors;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A byte-level reader of the index shape every writer produces: an object whose
 * {@code weight_map} is an object of tensor name to shard file name, beside other fields
 * ({@code metadata}) of any JSON value, with no escapes in any string. It exists for indexes of
 * many tensors: Jackson without a symbol table reads bytes through a UTF-8 Reader, and a
 * 96,000-entry index (7 MB) took about 0.1 s of a fresh JVM's load, most of it in making a
 * string of every value, though a writer names each shard hundreds of times in a row.
 *
 * <p>It never reports an error: anything it does not recognise as well-formed (an escape, a
 * control character, a number outside JSON's grammar, nesting past 32, a string of 10,000 bytes
 * or more, a number of 100 digits or more, no or two weight_maps,
 * bad syntax) makes {@link #parse} answer null, and {@link IndexFile} then runs Jackson, which
 * accepts the same inputs with the same result and says what is wrong with the others. The
 * input is valid UTF-8 (checked before).
 */
final class FastIndexJson {
    private static final byte[] WEIGHT_MAP = "weight_map".getBytes(StandardCharsets.US_ASCII);
    /** Deeper nesting, longer strings and numbers go to Jackson, whose limits decide them. */
    private static final int MAX_DEPTH = 32;
    private static final int MAX_STRING = 10_000;
    private static final int MAX_DIGITS = 100;

    /**
     * The weight_map's entries in order: {@code files.get(i)} is the shard of
     * {@code names.get(i)}, the same String instance for a run of entries naming one shard.
     */
    record Parsed(List<String> names, List<String> files) {
    }

    private final byte[] b;
    private final int len;
    private int pos;
    private int strStart;
    private int strEnd;

    private FastIndexJson(byte[] b) {
        this.b = b;
        this.len = b.length;
    }

    /** The weight_map, or null when the input needs Jackson (unusual or malformed). */
    static Parsed parse(byte[] bytes) {
        try {
            return new FastIndexJson(bytes).index();
        } catch (Unusual e) {
            return null;
        }
    }

    /** Thrown (without a stack trace) to leave the fast path. */
    private static final class Unusual extends RuntimeException {
        private static final Unusual INSTANCE = new Unusual();

        private Unusual() {
            super(null, null, false, false);
        }
    }

    private Parsed index() {
        expect('{');
        Parsed map = null;
        if (peek() != '}') {
            do {
                string();
                expect(':');
                if (Arrays.equals(b, strStart, strEnd, WEIGHT_MAP, 0, WEIGHT_MAP.length)) {
                    if (map != null) throw Unusual.INSTANCE;
                    map = weightMap();
                } else {
                    skipValue(1);
                }
            } while (comma('}'));
        } else {
            pos++;
        }
        skipWhitespace();
        if (pos != len || map == null) throw Unusual.INSTANCE;
        return map;
    }

    private Parsed weightMap() {
        expect('{');
        List<String> names = new ArrayList<>();
        List<String> files = new ArrayList<>();
        if (peek() == '}') {
            pos++;
            return new Parsed(names, files);
        }
        int lastStart = 0;
        int lastEnd = -1;
        String lastFile = null;
        do {
            string();
            names.add(new String(b, strStart, strEnd - strStart, StandardCharsets.UTF_8));
            expect(':');
            if (peek() != '"') throw Unusual.INSTANCE;
            string();
            if (lastFile == null || !Arrays.equals(b, strStart, strEnd, b, lastStart, lastEnd)) {
                lastFile = new String(b, strStart, strEnd - strStart, StandardCharsets.UTF_8);
                lastStart = strStart;
                lastEnd = strEnd;
            }
            files.add(lastFile);
        } while (comma('}'));
        return new Parsed(names, files);
    }

    /** Any JSON value, checked but not kept. */
    private void skipValue(int depth) {
        if (depth > MAX_DEPTH) throw Unusual.INSTANCE;
        byte c = peek();
        switch (c) {
            case '"' -> string();
            case '{' -> {
                pos++;
                if (peek() == '}') {
                    pos++;
                    return;
                }
                do {
                    string();
                    expect(':');
                    skipValue(depth + 1);
                } while (comma('}'));
            }
            case '[' -> {
                pos++;
                if (peek() == ']') {
                    pos++;
                    return;
                }
                do {
                    skipValue(depth + 1);
                } while (comma(']'));
            }
            case 't' -> literal("true");
            case 'f' -> literal("false");
            case 'n' -> literal("null");
            default -> number();
        }
    }

    private void literal(String word) {
        for (int i = 0; i < word.length(); i++) {
            if (pos >= len || b[pos] != word.charAt(i)) throw Unusual.INSTANCE;
            pos++;
        }
    }

    /** JSON's number grammar exactly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    private void number() {
        if (pos < len && b[pos] == '-') pos++;
        if (pos < len && b[pos] == '0') {
            pos++;
        } else if (digits() == 0) {
            throw Unusual.INSTANCE;
        }
        if (pos < len && b[pos] == '.') {
            pos++;
            if (digits() == 0) throw Unusual.INSTANCE;
        }
        if (pos < len && (b[pos] == 'e' || b[pos] == 'E')) {
            pos++;
            if (pos < len && (b[pos] == '+' || b[pos] == '-')) pos++;
            if (digits() == 0) throw Unusual.INSTANCE;
        }
    }

    private int digits() {
        int start = pos;
        while (pos < len && b[pos] >= '0' && b[pos] <= '9') pos++;
        if (pos - start >= MAX_DIGITS) throw Unusual.INSTANCE;
        return pos - start;
    }

    /** After a value: true on ',', false on {@code close}; anything else leaves the fast path. */
    private boolean comma(char close) {
        byte c = peek();
        pos++;
        if (c == ',') return true;
        if (c == close) return false;
        throw Unusual.INSTANCE;
    }

    /** A string without escapes or control characters; its bytes are [strStart, strEnd). */
    private void string() {
        expect('"');
        int start = pos;
        while (true) {
            if (pos >= len) throw Unusual.INSTANCE;
            byte c = b[pos];
            if (c == '"') break;
            if (c == '\\' || (c >= 0 && c < 0x20) || pos - start >= MAX_STRING) throw Unusual.INSTANCE;
            pos++;
        }
        strStart = start;
        strEnd = pos++;
    }

    private void expect(char c) {
        if (peek() != c) throw Unusual.INSTANCE;
        pos++;
    }

    /** The next byte that is not JSON whitespace; the position is left on it. */
    private byte peek() {
        skipWhitespace();
        if (pos >= len) throw Unusual.INSTANCE;
        return b[pos];
    }

    private void skipWhitespace() {
        while (pos < len) {
            byte c = b[pos];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
            pos++;
        }
    }
}
