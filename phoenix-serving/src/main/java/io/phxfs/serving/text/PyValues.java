package io.phxfs.serving.text;

import com.hubspot.jinjava.objects.SafeString;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Python's view of the values a template handles (strings, numbers, booleans, None, lists and
 * dicts, as Jackson or the engine build them and jinjava wraps them): truthiness, type tests,
 * iteration, length, equality and ordering. Jinja2 delegates all of these to Python, and
 * templates depend on the details (a non-empty "false" is true, 1 == 1.0, a string iterates by
 * character, a dict by key).
 */
final class PyValues {
    private PyValues() {
    }

    /**
     * The value jinjava wrapped (its PyList and PyMap views; a None stored in a scope,
     * {@link Scopes}), for type checks that must see through them.
     */
    static Object unwrap(Object v) {
        if (v instanceof java.util.Optional<?> o) {
            return o.orElse(null);
        }
        if (v instanceof com.hubspot.jinjava.objects.collections.PyList l) {
            return unwrap(l.toList());
        }
        if (v instanceof com.hubspot.jinjava.objects.collections.PyMap m && !(v instanceof com.hubspot.jinjava.objects.Namespace)) {
            return unwrap(m.toMap());
        }
        return v;
    }

    static boolean truthy(Object value) {
        Object v = unwrap(value);
        if (v == null) {
            return false;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof BigDecimal d) {
            return d.signum() != 0;
        }
        if (v instanceof BigInteger i) {
            return i.signum() != 0;
        }
        if (v instanceof Number n) {
            return n.doubleValue() != 0;
        }
        if (v instanceof CharSequence s) {
            return !s.isEmpty();
        }
        if (v instanceof SafeString s) {
            return !s.toString().isEmpty();
        }
        if (v instanceof Collection<?> c) {
            return !c.isEmpty();
        }
        if (v instanceof com.hubspot.jinjava.objects.Namespace || v instanceof LoopContext) {
            // objects to Python, not containers
            return true;
        }
        if (v instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        if (v.getClass().isArray()) {
            return java.lang.reflect.Array.getLength(v) != 0;
        }
        return true;
    }

    static boolean isString(Object v) {
        return v instanceof String || v instanceof SafeString;
    }

    /** A Python int (bool excluded, as Jinja2's "integer" test excludes it). */
    static boolean isInteger(Object v) {
        return v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger;
    }

    static boolean isFloat(Object v) {
        return v instanceof Double || v instanceof Float || v instanceof BigDecimal;
    }

    /** Jinja2's "number" test: int, float (and bool, a Python int subclass). */
    static boolean isNumber(Object v) {
        return isInteger(v) || isFloat(v) || v instanceof Boolean;
    }

    static boolean isMapping(Object v) {
        return v instanceof Map;
    }

    static boolean isList(Object v) {
        return v instanceof List || v != null && v.getClass().isArray();
    }

    /** Jinja2's "sequence" test: anything with a length and items (strings included). */
    static boolean isSequence(Object v) {
        return isString(v) || isList(v) || v instanceof Map || v instanceof Collection;
    }

    static boolean isIterable(Object v) {
        return isSequence(v) || v instanceof Iterable;
    }

    static String string(Object v) {
        return v instanceof SafeString s ? s.toString() : (String) v;
    }

    /** The items a for loop or a filter sees: characters of a string, keys of a dict. */
    static List<Object> iterate(Object v) {
        if (v == null) {
            return List.of();
        }
        if (isString(v)) {
            List<Object> chars = new ArrayList<>();
            string(v).codePoints().forEach(cp -> chars.add(Character.toString(cp)));
            return chars;
        }
        if (v instanceof Map<?, ?> m) {
            return new ArrayList<>(m.keySet());
        }
        if (v instanceof PyGenerator g) {
            return g.drain();
        }
        if (v instanceof List<?> l) {
            return new ArrayList<>(l);
        }
        if (v instanceof Iterable<?> it) {
            List<Object> out = new ArrayList<>();
            it.forEach(out::add);
            return out;
        }
        if (v.getClass().isArray()) {
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) {
                out.add(java.lang.reflect.Array.get(v, i));
            }
            return out;
        }
        throw PyErrors.type("'" + typeName(v) + "' object is not iterable");
    }

    /** Python's len(); strings count code points. */
    static int length(Object v) {
        if (isString(v)) {
            String s = string(v);
            return s.codePointCount(0, s.length());
        }
        if (v instanceof Collection<?> c) {
            return c.size();
        }
        if (v instanceof Map<?, ?> m) {
            return m.size();
        }
        if (v != null && v.getClass().isArray()) {
            return java.lang.reflect.Array.getLength(v);
        }
        throw PyErrors.type("object of type '" + typeName(v) + "' has no len()");
    }

    /** Python's ==: numbers by value across int, float and bool; lists and dicts element-wise. */
    static boolean eq(Object a, Object b) {
        if (a == b) {
            return true;
        }
        if (a == null || b == null) {
            return false;
        }
        if (isNumber(a) && isNumber(b)) {
            return PyNumbers.compare(a, b) == 0;
        }
        if (isString(a) && isString(b)) {
            return string(a).equals(string(b));
        }
        if (isList(a) && isList(b)) {
            List<Object> x = iterate(a);
            List<Object> y = iterate(b);
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!eq(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !eq(e.getValue(), y.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    /** Python's ordering (<, <=, ...): numbers, strings by code point, lists lexicographically. */
    static int compare(Object a, Object b, String op) {
        if (isNumber(a) && isNumber(b)) {
            return PyNumbers.compare(a, b);
        }
        if (isString(a) && isString(b)) {
            return compareCodePoints(string(a), string(b));
        }
        if (isList(a) && isList(b)) {
            List<Object> x = iterate(a);
            List<Object> y = iterate(b);
            for (int i = 0; i < Math.min(x.size(), y.size()); i++) {
                if (!eq(x.get(i), y.get(i))) {
                    return compare(x.get(i), y.get(i), op);
                }
            }
            return Integer.compare(x.size(), y.size());
        }
        throw PyErrors.type("'" + op + "' not supported between instances of '" + typeName(a) + "' and '"
                + typeName(b) + "'");
    }

    static int compareCodePoints(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) {
                return Integer.compare(x, y);
            }
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    /** Python's "in". */
    static boolean contains(Object container, Object item) {
        if (container == null) {
            throw PyErrors.type("argument of type 'NoneType' is not iterable");
        }
        if (isString(container)) {
            if (!isString(item)) {
                throw PyErrors.type("'in <string>' requires string as left operand, not " + typeName(item));
            }
            return string(container).contains(string(item));
        }
        if (container instanceof Map<?, ?> m) {
            return item != null && (m.containsKey(item) || isString(item) && m.containsKey(string(item)));
        }
        for (Object o : iterate(container)) {
            if (eq(o, item)) {
                return true;
            }
        }
        return false;
    }

    /** Python's type name, for error messages. */
    static String typeName(Object v) {
        if (v == null) {
            return "NoneType";
        }
        if (v instanceof Boolean) {
            return "bool";
        }
        if (isInteger(v)) {
            return "int";
        }
        if (isFloat(v)) {
            return "float";
        }
        if (isString(v)) {
            return "str";
        }
        if (v instanceof Map) {
            return "dict";
        }
        if (isList(v)) {
            return "list";
        }
        if (v instanceof PyGenerator g) {
            return g.kind();
        }
        return v.getClass().getSimpleName();
    }
}
