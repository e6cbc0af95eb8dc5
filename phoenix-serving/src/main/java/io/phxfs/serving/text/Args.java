package io.phxfs.serving.text;

import java.util.List;
import java.util.Map;

/**
 * The arguments of a call from a template (a str method, a filter, a global), bound the way
 * Python binds them: by position or by keyword.
 *
 * @param positional the positional arguments
 * @param keywords the keyword arguments
 */
record Args(List<Object> positional, Map<String, Object> keywords) {
    static final Args NONE = new Args(List.of(), Map.of());

    boolean has(int index, String name) {
        return index >= 0 && index < positional.size() || name != null && keywords.containsKey(name);
    }

    /** The argument at {@code index} or named {@code name}; a missing one is a TypeError. */
    Object get(int index, String name) {
        if (!has(index, name)) {
            throw PyErrors.type("missing required argument '" + name + "' (pos " + (index + 1) + ")");
        }
        return opt(index, name, null);
    }

    Object opt(int index, String name, Object fallback) {
        if (index >= 0 && index < positional.size()) {
            return positional.get(index);
        }
        if (name != null && keywords.containsKey(name)) {
            return keywords.get(name);
        }
        return fallback;
    }

    String string(int index, String name) {
        Object v = get(index, name);
        if (!PyValues.isString(v)) {
            throw PyErrors.type("argument '" + name + "' must be str, not " + PyValues.typeName(v));
        }
        return PyValues.string(v);
    }

    /** A string argument that may be absent or None. */
    String optString(int index, String name) {
        Object v = opt(index, name, null);
        if (v == null) {
            return null;
        }
        if (!PyValues.isString(v)) {
            throw PyErrors.type("argument '" + name + "' must be str or None, not " + PyValues.typeName(v));
        }
        return PyValues.string(v);
    }

    int intValue(int index, String name) {
        return toInt(get(index, name), name);
    }

    int optInt(int index, String name, int fallback) {
        Object v = opt(index, name, null);
        return v == null ? fallback : toInt(v, name);
    }

    boolean optBool(int index, String name, boolean fallback) {
        Object v = opt(index, name, null);
        return v == null ? fallback : PyValues.truthy(v);
    }

    private static int toInt(Object v, String name) {
        if (!PyNumbers.isInt(v)) {
            throw PyErrors.type("argument '" + name + "' must be an integer, not " + PyValues.typeName(v));
        }
        return (int) PyNumbers.toDouble(v);
    }
}
