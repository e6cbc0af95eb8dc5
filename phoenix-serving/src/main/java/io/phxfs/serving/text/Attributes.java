package io.phxfs.serving.text;

import java.util.List;
import java.util.Map;

/**
 * Jinja2's attribute getter for filters that take {@code attribute=} (map, selectattr, sort,
 * groupby, join, sum, unique, min, max): a dotted path, whose parts are dict keys or, when
 * numeric, list indexes.
 */
final class Attributes {
    private Attributes() {
    }

    static Presence lookup(Object item, Object path) {
        if (PyNumbers.isInt(path)) {
            return step(item, PyRepr.str(path));
        }
        Presence p = new Presence(true, item);
        for (String part : PyRepr.str(path).split("\\.")) {
            if (!p.present()) {
                return p;
            }
            p = step(p.value(), part);
        }
        return p;
    }

    /** The attribute's value, null when it is undefined. */
    static Object get(Object item, Object path) {
        return lookup(item, path).value();
    }

    private static Presence step(Object value, String part) {
        Object v = PyValues.unwrap(value);
        if (v instanceof Map<?, ?> m) {
            return m.containsKey(part) ? new Presence(true, m.get(part)) : new Presence(false, null);
        }
        if (PyValues.isList(v) && part.matches("-?\\d+")) {
            List<Object> items = PyValues.iterate(v);
            int i = Integer.parseInt(part);
            i = i < 0 ? i + items.size() : i;
            return i >= 0 && i < items.size() ? new Presence(true, items.get(i)) : new Presence(false, null);
        }
        return new Presence(false, null);
    }
}
