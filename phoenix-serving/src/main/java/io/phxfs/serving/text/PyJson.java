package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps}, which transformers' tojson filter calls: its separators
 * ({@code ", "} and {@code ": "}, or {@code ","} with an indent), its float repr, its escapes
 * (every control character, and with ensure_ascii every non-ASCII one as \\uXXXX), and its
 * indentation, where an empty list or dict stays {@code []} or <code>{}</code>.
 */
final class PyJson {
    private final String indent;
    private final String itemSeparator;
    private final String keySeparator;
    private final boolean sortKeys;
    private final boolean ensureAscii;
    private final StringBuilder out = new StringBuilder();

    /**
     * @param indent null for one line, else the text of one level (Python's int indent is that many spaces)
     * @param separators null for Python's default, else {item separator, key separator}
     */
    PyJson(String indent, String[] separators, boolean sortKeys, boolean ensureAscii) {
        this.indent = indent;
        this.itemSeparator = separators != null ? separators[0] : indent == null ? ", " : ",";
        this.keySeparator = separators != null ? separators[1] : ": ";
        this.sortKeys = sortKeys;
        this.ensureAscii = ensureAscii;
    }

    String dumps(Object value) {
        out.setLength(0);
        write(value, 0);
        return out.toString();
    }

    private void write(Object v, int level) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (PyValues.isString(v)) {
            string(PyValues.string(v));
        } else if (PyValues.isFloat(v)) {
            double d = ((Number) v).doubleValue();
            out.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity")
                    : PyRepr.floatRepr(d));
        } else if (v instanceof Number) {
            out.append(v);
        } else if (v instanceof Map<?, ?> m) {
            object(m, level);
        } else if (PyValues.isList(v)) {
            array(PyValues.iterate(v), level);
        } else {
            throw PyErrors.type("Object of type " + PyValues.typeName(v) + " is not JSON serializable");
        }
    }

    private void array(List<Object> items, int level) {
        if (items.isEmpty()) {
            out.append("[]");
            return;
        }
        out.append('[');
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) {
                out.append(itemSeparator);
            }
            newline(level + 1);
            write(items.get(i), level + 1);
        }
        newline(level);
        out.append(']');
    }

    private void object(Map<?, ?> map, int level) {
        if (map.isEmpty()) {
            out.append("{}");
            return;
        }
        List<Map.Entry<String, Object>> entries = new ArrayList<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            entries.add(Map.entry(key(e.getKey()), e.getValue() == null ? NULL : e.getValue()));
        }
        if (sortKeys) {
            entries.sort((a, b) -> PyValues.compareCodePoints(a.getKey(), b.getKey()));
        }
        out.append('{');
        for (int i = 0; i < entries.size(); i++) {
            if (i > 0) {
                out.append(itemSeparator);
            }
            newline(level + 1);
            string(entries.get(i).getKey());
            out.append(keySeparator);
            Object value = entries.get(i).getValue();
            write(value == NULL ? null : value, level + 1);
        }
        newline(level);
        out.append('}');
    }

    /** Map.entry refuses null values. */
    private static final Object NULL = new Object();

    private static String key(Object k) {
        if (k == null) {
            return "null";
        }
        if (k instanceof Boolean b) {
            return b ? "true" : "false";
        }
        if (PyValues.isString(k)) {
            return PyValues.string(k);
        }
        if (PyValues.isFloat(k)) {
            return PyRepr.floatRepr(((Number) k).doubleValue());
        }
        if (k instanceof Number) {
            return k.toString();
        }
        throw PyErrors.type("keys must be str, int, float, bool or None, not " + PyValues.typeName(k));
    }

    private void newline(int level) {
        if (indent != null) {
            out.append('\n');
            out.append(indent.repeat(level));
        }
    }

    private void string(String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || ensureAscii && c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
