package io.phxfs.safetensors;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The JSON part of a header, read with Jackson's streaming parser: field by field, so that
 * every malformed value is reported with the tensor and field it belongs to, and nothing is
 * materialised beyond the entries themselves.
 */
final class HeaderJson {
    static final String METADATA = "__metadata__";

    /** A tensor entry with its fields checked one by one; the layout is checked later. */
    record Entry(String name, Dtype dtype, long[] shape, long begin, long end) {
    }

    record Parsed(Map<String, String> metadata, List<Entry> entries) {
    }

    private final Path file;
    private final JsonFactory factory;

    HeaderJson(Path file, long maxHeaderBytes) {
        this.file = file;
        int max = (int) Math.min(Integer.MAX_VALUE, Math.max(maxHeaderBytes, 1));
        // A header holds only short names and numbers, but __metadata__ values may be long;
        // the header size limit already bounds them. Symbol-table canonicalisation is off: it
        // can throw on crafted hash collisions and saves nothing for a one-off parse.
        this.factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder()
                        .maxStringLength(max)
                        .maxNameLength(max)
                        .maxNestingDepth(16)
                        .build())
                .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
                .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                .build();
    }

    Parsed parse(byte[] bytes, int len) {
        try (JsonParser p = factory.createParser(bytes, 0, len)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw fail(null, "header is empty (only whitespace)");
            }
            if (t != JsonToken.START_OBJECT) {
                throw fail(null, "header is not a JSON object (it starts with " + describe(t) + ")");
            }
            Map<String, String> metadata = Map.of();
            boolean sawMetadata = false;
            List<Entry> entries = new ArrayList<>();
            Set<String> names = new HashSet<>();
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                if (METADATA.equals(name)) {
                    if (sawMetadata) {
                        throw fail("field " + METADATA, "appears twice");
                    }
                    sawMetadata = true;
                    metadata = metadata(p);
                    continue;
                }
                if (!Names.wellFormed(name)) {
                    throw fail(Names.tensor(name), "name is not valid Unicode (unpaired surrogate escape)");
                }
                if (!names.add(name)) {
                    throw fail(Names.tensor(name), "appears twice in the header");
                }
                entries.add(entry(p, name));
            }
            if (t != JsonToken.END_OBJECT) {
                throw fail(null, "malformed header object");
            }
            t = p.nextToken();
            if (t != null) {
                throw fail(null, "trailing data after the header's JSON object (" + describe(t) + " at byte "
                        + offset(p.currentTokenLocation()) + ")");
            }
            return new Parsed(metadata, entries);
        } catch (JacksonException e) {
            throw fail(null, "header is not valid JSON: " + plain(e, bytes, len)
                    + (e.getLocation() == null || offset(e.getLocation()) < 0 ? ""
                            : " (at byte " + offset(e.getLocation()) + ")"), e);
        } catch (IOException e) {
            // Only JacksonException can come from a parser over a byte array; anything else is a bug.
            throw new IllegalStateException(e);
        }
    }

    private Map<String, String> metadata(JsonParser p) throws IOException {
        String subject = "field " + METADATA;
        JsonToken t = p.nextToken();
        if (t == JsonToken.VALUE_NULL) {
            return Map.of();
        }
        if (t != JsonToken.START_OBJECT) {
            throw fail(subject, "is " + describe(t) + ", not an object of strings");
        }
        Map<String, String> m = new LinkedHashMap<>();
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String key = p.currentName();
            JsonToken v = p.nextToken();
            if (v != JsonToken.VALUE_STRING) {
                throw fail(subject, "value of " + Names.quote(key) + " is " + describe(v) + ", not a string");
            }
            String value = p.getText();
            if (!Names.wellFormed(key) || !Names.wellFormed(value)) {
                throw fail(subject, "entry " + Names.quote(key) + " is not valid Unicode (unpaired surrogate escape)");
            }
            if (m.put(key, value) != null) {
                throw fail(subject, "key " + Names.quote(key) + " appears twice");
            }
        }
        return m;
    }

    private Entry entry(JsonParser p, String name) throws IOException {
        String subject = Names.tensor(name);
        JsonToken t = p.nextToken();
        if (t != JsonToken.START_OBJECT) {
            throw fail(subject, "entry is " + describe(t) + ", not an object with dtype, shape and data_offsets");
        }
        Dtype dtype = null;
        long[] shape = null;
        long[] offsets = null;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            switch (field) {
                case "dtype" -> {
                    if (dtype != null) {
                        throw fail(subject, "field 'dtype' appears twice");
                    }
                    dtype = dtype(p, subject);
                }
                case "shape" -> {
                    if (shape != null) {
                        throw fail(subject, "field 'shape' appears twice");
                    }
                    shape = integers(p, subject, "shape");
                }
                case "data_offsets" -> {
                    if (offsets != null) {
                        throw fail(subject, "field 'data_offsets' appears twice");
                    }
                    offsets = integers(p, subject, "data_offsets");
                    if (offsets.length != 2) {
                        throw fail(subject, "data_offsets has " + offsets.length + " entries, not 2 [begin, end]");
                    }
                }
                default -> {
                    // the reference implementation (serde, without deny_unknown_fields) skips a
                    // field it does not know, whatever its value: a file it loads loads here too
                    p.nextToken();
                    p.skipChildren();
                }
            }
        }
        if (dtype == null) {
            throw fail(subject, "missing field 'dtype'");
        }
        if (shape == null) {
            throw fail(subject, "missing field 'shape'");
        }
        if (offsets == null) {
            throw fail(subject, "missing field 'data_offsets'");
        }
        return new Entry(name, dtype, shape, offsets[0], offsets[1]);
    }

    private Dtype dtype(JsonParser p, String subject) throws IOException {
        JsonToken t = p.nextToken();
        if (t != JsonToken.VALUE_STRING) {
            throw fail(subject, "dtype is " + describe(t) + ", not a string");
        }
        String s = p.getText();
        return Dtype.fromHeaderName(s).orElseThrow(() -> fail(subject, "unknown dtype " + Names.quote(s)
                + " (known: " + Arrays.toString(Dtype.values()) + ")"));
    }

    /** An array of non-negative integers that fit a long; grows with the input, never ahead of it. */
    private long[] integers(JsonParser p, String subject, String field) throws IOException {
        JsonToken t = p.nextToken();
        if (t != JsonToken.START_ARRAY) {
            throw fail(subject, field + " is " + describe(t) + ", not an array of integers");
        }
        long[] v = new long[4];
        int n = 0;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            String at = field + "[" + n + "]";
            if (t == JsonToken.VALUE_NUMBER_FLOAT) {
                throw fail(subject, at + " is " + p.getText() + ", not an integer");
            }
            if (t != JsonToken.VALUE_NUMBER_INT) {
                throw fail(subject, at + " is " + describe(t) + ", not an integer");
            }
            if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                throw fail(subject, at + " is " + abbreviate(p.getText()) + ", which overflows a 64-bit integer");
            }
            long x = p.getLongValue();
            if (x < 0) {
                throw fail(subject, at + " is negative (" + x + ")");
            }
            if (x == 0 && p.getText().startsWith("-")) {
                // not 0: the reference implementation (serde_json) reads -0 as a float and refuses it
                throw fail(subject, at + " is -0, not an unsigned integer");
            }
            if (n == v.length) {
                v = Arrays.copyOf(v, n * 2);
            }
            v[n++] = x;
        }
        return Arrays.copyOf(v, n);
    }

    private static String describe(JsonToken t) {
        if (t == null) {
            return "the end of the header";
        }
        return switch (t) {
            case START_OBJECT -> "an object";
            case START_ARRAY -> "an array";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
            case VALUE_TRUE, VALUE_FALSE -> "a boolean";
            case VALUE_NULL -> "null";
            default -> t.asString() == null ? t.name() : "'" + t.asString() + "'";
        };
    }

    /**
     * Jackson's message without its source description ("[Source: REDACTED
     * (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 1]"), which
     * tells a user nothing. The position in it stays: as a byte of the file when the header's
     * bytes are given (the unit of every other position in these messages), else as line and
     * column.
     */
    static String plain(JacksonException e, byte[] header, int len) {
        String m = e.getOriginalMessage();
        if (m == null) {
            return e.getClass().getSimpleName();
        }
        java.util.regex.Matcher x = SOURCE.matcher(m);
        StringBuilder b = new StringBuilder();
        while (x.find()) {
            long line = Long.parseLong(x.group(1));
            long column = Long.parseLong(x.group(2));
            long at = header == null ? -1 : byteAt(header, len, line, column);
            x.appendReplacement(b, at < 0 ? "line " + line + ", column " + column
                    : "byte " + (at + SafetensorsHeader.LENGTH_PREFIX));
        }
        x.appendTail(b);
        return b.toString();
    }

    private static final java.util.regex.Pattern SOURCE =
            java.util.regex.Pattern.compile("\\[Source: .*?; line: (\\d+), column: (\\d+)\\]");

    /** Offset of a 1-based line and column (Jackson counts bytes in a byte array), or -1. */
    private static long byteAt(byte[] b, int len, long line, long column) {
        long start = 0;
        for (int i = 0; i < len && line > 1; i++) {
            if (b[i] == '\n' || b[i] == '\r' && (i + 1 == len || b[i + 1] != '\n')) {
                line--;
                start = i + 1;
            }
        }
        long at = start + column - 1;
        return line == 1 && column >= 1 && at < len ? at : -1;
    }

    private static String abbreviate(String digits) {
        return digits.length() <= 40 ? digits : digits.substring(0, 20) + "...(" + digits.length() + " digits)";
    }

    /**
     * Byte offset within the file (the header starts after the 8-byte length). Jackson's
     * byte-array parser reports its byte position as the "char offset".
     */
    private static long offset(JsonLocation loc) {
        long b = loc.getByteOffset() >= 0 ? loc.getByteOffset() : loc.getCharOffset();
        return b < 0 ? -1 : b + SafetensorsHeader.LENGTH_PREFIX;
    }

    private SafetensorsFormatException fail(String subject, String problem) {
        return new SafetensorsFormatException(file, subject, problem);
    }

    private SafetensorsFormatException fail(String subject, String problem, Throwable cause) {
        return new SafetensorsFormatException(file, subject, problem, cause);
    }
}
