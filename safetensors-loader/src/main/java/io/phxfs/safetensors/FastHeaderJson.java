package io.phxfs.safetensors;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A byte-level reader of the header shape every writer produces: an object of tensor entries
 * ({@code dtype}, {@code shape}, {@code data_offsets}) and an optional {@code __metadata__}
 * object of strings, with no escapes in any string. It exists for checkpoints of many small
 * tensors (mixture-of-experts models carry thousands to hundreds of thousands): there the
 * generic streaming parser, with its per-token bookkeeping, was most of a load's fixed cost
 * (6-10 ms for 2,349 entries, 8x the time the same bytes take here).
 *
 * <p>It never reports an error itself: anything it does not recognise as well-formed (an
 * escape, a field besides the three, which the full parser skips, an unknown dtype, a number
 * with a sign, fraction, exponent, leading zero or 19+ digits, bad syntax), and any tensor
 * whose extent {@link DataLayout#checked} refuses,
 * makes {@link #parse} answer null, and the caller then runs {@link HeaderJson} and
 * {@link DataLayout#validate}, which accept the same inputs with the same result and name what
 * is wrong with the others. It makes each {@link TensorInfo} directly: an intermediate entry
 * per tensor was a sixth of a many-tensor parse's allocation, and on a VM where each fresh page
 * costs microseconds the first time it is touched, allocation is most of a cold parse's time.
 * A name given twice it does not look for (a set of 96,000 names was a tenth of the allocation
 * of a large load): the header built from its answer finds it, and any error after this reader
 * sends the input to {@link HeaderJson} too, so that the message is the full parser's.
 *
 * <p>It is also the UTF-8 check of the usual header: outside strings it accepts only ASCII, and
 * the first string holding a byte past ASCII has the whole input checked (once) by
 * {@link Utf8}, answering null when it is not valid UTF-8. An all-ASCII header, which is what
 * writers produce, is thus read in one pass instead of two: in a fresh JVM, where the separate
 * check ran as cold code over every byte of a large header.
 */
final class FastHeaderJson {
    private static final byte[] DTYPE = ascii("dtype");
    private static final byte[] SHAPE = ascii("shape");
    private static final byte[] OFFSETS = ascii("data_offsets");
    private static final byte[] METADATA = ascii(HeaderJson.METADATA);
    private static final byte[] NULL = ascii("null");
    private static final Dtype[] DTYPES = Dtype.values();
    private static final byte[][] DTYPE_NAMES = new byte[DTYPES.length][];

    static {
        for (int i = 0; i < DTYPES.length; i++) {
            DTYPE_NAMES[i] = ascii(DTYPES[i].name());
        }
    }

    private static final long[] EMPTY = new long[0];

    private final byte[] b;
    private final int len;
    private final long dataBytes;
    /** Integers of the array being read. */
    private long[] scratch = new long[8];
    private int pos;
    /** Start and end of the last string read (between the quotes). */
    private int strStart;
    private int strEnd;
    /** Index of the dtype of the entry before, or -1. */
    private int lastDtype = -1;
    /** The whole input has been found valid UTF-8 (checked at the first non-ASCII byte). */
    private boolean utf8Valid;

    private FastHeaderJson(byte[] b, int len, long dataBytes) {
        this.b = b;
        this.len = len;
        this.dataBytes = dataBytes;
    }

    /** The metadata and the tensors in header order, each checked on its own (not yet tiled). */
    record Parsed(Map<String, String> metadata, List<TensorInfo> tensors) {
    }

    /**
     * The parsed header, or null when the input needs the full parser (unusual, malformed, a
     * tensor's extent wrong for its shape or past {@code dataBytes}, or not valid UTF-8: the
     * caller's own checks then say where).
     *
     * @param dataBytes the size of the file's data section
     */
    static Parsed parse(byte[] bytes, int len, long dataBytes) {
        try {
            return new FastHeaderJson(bytes, len, dataBytes).header();
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

    private static Unusual unusual() {
        return Unusual.INSTANCE;
    }

    private Parsed header() {
        expect('{');
        List<TensorInfo> tensors = new ArrayList<>();
        Map<String, String> metadata = Map.of();
        boolean sawMetadata = false;
        if (peek() == '}') {
            pos++;
        } else {
            do {
                string();
                if (equalsLast(METADATA)) {
                    if (sawMetadata) throw unusual();
                    sawMetadata = true;
                    expect(':');
                    metadata = metadata();
                    continue;
                }
                String name = lastString();
                expect(':');
                tensors.add(tensor(name));
            } while (comma('}'));
        }
        skipWhitespace();
        if (pos != len) throw unusual();
        return new Parsed(metadata, tensors);
    }

    private Map<String, String> metadata() {
        if (peek() == 'n') {
            if (len - pos < NULL.length || !Arrays.equals(b, pos, pos + NULL.length, NULL, 0, NULL.length)) {
                throw unusual();
            }
            pos += NULL.length;
            return Map.of();
        }
        expect('{');
        Map<String, String> m = new LinkedHashMap<>();
        if (peek() == '}') {
            pos++;
            return m;
        }
        do {
            string();
            String key = lastString();
            expect(':');
            if (peek() != '"') throw unusual();
            string();
            if (m.put(key, lastString()) != null) throw unusual();
        } while (comma('}'));
        return m;
    }

    private TensorInfo tensor(String name) {
        expect('{');
        Dtype dtype = null;
        long[] shape = null;
        boolean offsets = false;
        long begin = 0;
        long end = 0;
        if (peek() == '}') throw unusual();
        do {
            string();
            expect(':');
            if (equalsLast(DTYPE) && dtype == null) {
                if (peek() != '"') throw unusual();
                string();
                dtype = dtype();
            } else if (equalsLast(SHAPE) && shape == null) {
                shape = integers();
            } else if (equalsLast(OFFSETS) && !offsets) {
                offsets = true;
                if (integers(scratch) != 2) throw unusual();
                begin = scratch[0];
                end = scratch[1];
            } else {
                throw unusual();
            }
        } while (comma('}'));
        if (dtype == null || shape == null || !offsets) throw unusual();
        TensorInfo t = DataLayout.checked(name, dtype, shape, begin, end, dataBytes);
        if (t == null) throw unusual();
        return t;
    }

    private Dtype dtype() {
        // the last dtype read first: a checkpoint's tensors mostly share one
        if (lastDtype >= 0 && equalsLast(DTYPE_NAMES[lastDtype])) return DTYPES[lastDtype];
        for (int i = 0; i < DTYPES.length; i++) {
            if (equalsLast(DTYPE_NAMES[i])) {
                lastDtype = i;
                return DTYPES[i];
            }
        }
        throw unusual();
    }

    /** An array of integers, one array of exactly its length. */
    private long[] integers() {
        int n = integers(scratch);
        return n == 0 ? EMPTY : Arrays.copyOf(scratch, n);
    }

    /**
     * An array of integers into {@code v} (grown into {@link #scratch} as needed); the count.
     * Reused: a shape or an offset pair per tensor made two arrays each before.
     */
    private int integers(long[] v) {
        expect('[');
        int n = 0;
        if (peek() == ']') {
            pos++;
            return 0;
        }
        do {
            skipWhitespace();
            byte[] b = this.b;
            int start = pos;
            int p = start;
            int end = Math.min(len, start + 19); // 19 digits or more: left to the full parser below
            long x = 0;
            while (p < end && b[p] >= '0' && b[p] <= '9') {
                x = x * 10 + (b[p++] - '0');
            }
            pos = p;
            int digits = p - start;
            // no digits, a leading zero, or possibly past 2^63: the full parser decides
            if (digits == 0 || digits > 18 || (digits > 1 && b[start] == '0')) throw unusual();
            if (n == v.length) {
                v = Arrays.copyOf(v, n * 2);
                scratch = v;
            }
            v[n++] = x;
        } while (comma(']'));
        return n;
    }

    /** After a value: true on ',', false on {@code close}; anything else leaves the fast path. */
    private boolean comma(char close) {
        byte c = peek();
        pos++;
        if (c == ',') return true;
        if (c == close) return false;
        throw unusual();
    }

    /** A string without escapes or control characters; its bytes are [strStart, strEnd). */
    private void string() {
        expect('"');
        // locals, not fields, in the loop: it runs for every byte of every name, and in a fresh
        // JVM it is interpreted at first, where each field access costs
        byte[] b = this.b;
        int n = len;
        int start = pos;
        int p = start;
        while (true) {
            if (p >= n) throw unusual();
            byte c = b[p];
            if (c == '"') break;
            // bytes past ASCII are negative: one test finds them, control characters and escapes
            if (c < 0x20 || c == '\\') {
                if (c >= 0 || !wellFormedUtf8()) throw unusual();
            }
            p++;
        }
        strStart = start;
        strEnd = p;
        pos = p + 1;
    }

    private boolean wellFormedUtf8() {
        if (!utf8Valid) {
            utf8Valid = Utf8.firstInvalid(b, len) < 0;
        }
        return utf8Valid;
    }

    private String lastString() {
        return new String(b, strStart, strEnd - strStart, StandardCharsets.UTF_8);
    }

    /** The last string is {@code s}: a plain loop, as the strings compared are a few bytes long. */
    private boolean equalsLast(byte[] s) {
        int n = strEnd - strStart;
        if (n != s.length) return false;
        byte[] b = this.b;
        int at = strStart;
        for (int i = 0; i < n; i++) {
            if (b[at + i] != s[i]) return false;
        }
        return true;
    }

    private void expect(char c) {
        if (peek() != c) throw unusual();
        pos++;
    }

    /** The next byte that is not JSON whitespace; the position is left on it. */
    private byte peek() {
        skipWhitespace();
        if (pos >= len) throw unusual();
        return b[pos];
    }

    private void skipWhitespace() {
        byte[] b = this.b;
        int p = pos;
        int n = len;
        while (p < n) {
            byte c = b[p];
            if (c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t')) break;
            p++;
        }
        pos = p;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
