package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Jinja2's filters over sequences and dicts: length, count, first, last, list, join, reverse,
 * sort, unique, sum, min, max, batch, slice, items, dictsort and groupby. Comparisons of strings
 * ignore case unless {@code case_sensitive} is set, as Jinja2's do; filters that Jinja2 makes
 * generators give lists.
 */
final class SequenceFilters {
    private SequenceFilters() {
    }

    static List<PyFilter> all() {
        List<PyFilter> out = new ArrayList<>();
        PyFilter.Body length = (v, a, in) -> v == null && !in.defined() ? 0L : (long) PyValues.length(PyValues.unwrap(v));
        out.add(new PyFilter("length", length));
        out.add(new PyFilter("count", length));
        out.add(new PyFilter("first", (v, a, in) -> {
            List<Object> items = items(v, in);
            return items.isEmpty() ? PyFilter.UNDEFINED : items.get(0);
        }));
        out.add(new PyFilter("last", (v, a, in) -> {
            if (PyValues.unwrap(v) instanceof PyGenerator g) {
                throw PyErrors.type("'" + g.kind() + "' object is not reversible");
            }
            List<Object> items = items(v, in);
            return items.isEmpty() ? PyFilter.UNDEFINED : items.get(items.size() - 1);
        }));
        out.add(new PyFilter("list", (v, a, in) -> items(v, in)));
        out.add(new PyFilter("join", SequenceFilters::join));
        out.add(new PyFilter("reverse", (v, a, in) -> {
            if (PyValues.isString(v)) {
                return new StringBuilder(PyValues.string(v)).reverse().toString();
            }
            boolean iterator = PyValues.unwrap(v) instanceof PyGenerator;
            List<Object> items = items(v, in);
            Collections.reverse(items);
            // reversed() of a list is an iterator; of a generator, jinja2 falls back to a reversed list
            return iterator ? items : new PyGenerator(items, "list_reverseiterator");
        }));
        out.add(new PyFilter("sort", (v, a, in) -> {
            List<Object> items = items(v, in);
            Comparator<Object> order = order(a.optBool(1, "case_sensitive", false), a.opt(2, "attribute", null));
            items.sort(a.optBool(0, "reverse", false) ? order.reversed() : order);
            return items;
        }));
        out.add(new PyFilter("unique", (v, a, in) -> {
            boolean caseSensitive = a.optBool(0, "case_sensitive", false);
            Object attribute = a.opt(1, "attribute", null);
            List<Object> seen = new ArrayList<>();
            List<Object> kept = new ArrayList<>();
            for (Object item : items(v, in)) {
                Object key = key(item, caseSensitive, attribute);
                if (seen.stream().noneMatch(k -> PyValues.eq(k, key))) {
                    seen.add(key);
                    kept.add(item);
                }
            }
            return new PyGenerator(kept, "generator");
        }));
        out.add(new PyFilter("sum", (v, a, in) -> {
            Object attribute = a.opt(0, "attribute", null);
            Object total = a.opt(1, "start", 0L);
            for (Object item : items(v, in)) {
                total = PyOperators.plus(total, attribute == null ? item : Attributes.get(item, attribute));
            }
            return total;
        }));
        out.add(new PyFilter("min", (v, a, in) -> extreme(items(v, in), a, false)));
        out.add(new PyFilter("max", (v, a, in) -> extreme(items(v, in), a, true)));
        out.add(new PyFilter("batch", (v, a, in) -> {
            int size = a.intValue(0, "linecount");
            Object fill = a.opt(1, "fill_with", null);
            List<Object> rows = new ArrayList<>();
            List<Object> row = new ArrayList<>();
            for (Object item : items(v, in)) {
                row.add(item);
                if (row.size() == size) {
                    rows.add(row);
                    row = new ArrayList<>();
                }
            }
            if (!row.isEmpty()) {
                while (fill != null && row.size() < size) {
                    row.add(fill);
                }
                rows.add(row);
            }
            return new PyGenerator(rows, "generator");
        }));
        out.add(new PyFilter("slice", (v, a, in) -> {
            List<Object> seq = items(v, in);
            int slices = a.intValue(0, "slices");
            Object fill = a.opt(1, "fill_with", null);
            int perSlice = seq.size() / slices;
            int withExtra = seq.size() % slices;
            int offset = 0;
            List<Object> out2 = new ArrayList<>();
            for (int n = 0; n < slices; n++) {
                int start = offset + n * perSlice;
                if (n < withExtra) {
                    offset++;
                }
                int end = offset + (n + 1) * perSlice;
                List<Object> part = new ArrayList<>(seq.subList(start, end));
                if (fill != null && n >= withExtra) {
                    part.add(fill);
                }
                out2.add(part);
            }
            return new PyGenerator(out2, "generator");
        }));
        out.add(new PyFilter("items", (v, a, in) -> {
            Object m = PyValues.unwrap(v);
            if (m == null && !in.defined()) {
                return new ArrayList<>();
            }
            if (!(m instanceof Map<?, ?> map)) {
                throw PyErrors.type("Can only get item pairs from a mapping.");
            }
            return new PyGenerator(pairs(map), "generator");
        }));
        out.add(new PyFilter("dictsort", (v, a, in) -> {
            Object m = PyValues.unwrap(v);
            if (!(m instanceof Map<?, ?> map)) {
                throw PyErrors.fail("FilterArgumentError: dictsort needs a mapping");
            }
            boolean caseSensitive = a.optBool(0, "case_sensitive", false);
            String by = a.optString(1, "by");
            int pos = "value".equals(by) ? 1 : 0;
            List<Object> pairs = pairs(map);
            Comparator<Object> order = (x, y) -> compare(key(((List<?>) x).get(pos), caseSensitive, null),
                    key(((List<?>) y).get(pos), caseSensitive, null));
            pairs.sort(a.optBool(2, "reverse", false) ? order.reversed() : order);
            return pairs;
        }));
        out.add(new PyFilter("groupby", SequenceFilters::groupby));
        return out;
    }

    /** What the filter iterates: undefined gives nothing, as Jinja2's Undefined iterates empty. */
    static List<Object> items(Object v, PyFilter.Input in) {
        if (v == null && !in.defined()) {
            return new ArrayList<>();
        }
        return new ArrayList<>(PyValues.iterate(PyValues.unwrap(v)));
    }

    private static List<Object> pairs(Map<?, ?> map) {
        List<Object> out = new ArrayList<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            out.add(new PyTuple(java.util.Arrays.asList(e.getKey(), e.getValue())));
        }
        return out;
    }

    private static Object join(Object v, Args a, PyFilter.Input in) {
        String sep = a.opt(0, "d", "") == null ? "" : PyRepr.str(a.opt(0, "d", ""));
        Object attribute = a.opt(1, "attribute", null);
        StringBuilder out = new StringBuilder();
        List<Object> items = items(v, in);
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) {
                out.append(sep);
            }
            Object item = attribute == null ? items.get(i) : Attributes.get(items.get(i), attribute);
            out.append(item == null ? "None" : PyRepr.str(item));
        }
        return out.toString();
    }

    /** The sort key: the attribute (when given), lowercased when it is a string and case does not count. */
    static Object key(Object item, boolean caseSensitive, Object attribute) {
        Object k = attribute == null ? item : Attributes.get(item, attribute);
        if (!caseSensitive && PyValues.isString(k)) {
            return PyValues.string(k).toLowerCase(Locale.ROOT);
        }
        return k;
    }

    static Comparator<Object> order(boolean caseSensitive, Object attribute) {
        return (x, y) -> compare(key(x, caseSensitive, attribute), key(y, caseSensitive, attribute));
    }

    /** As Jinja2's sort keys compare: equal values need no ordering (None with None is fine). */
    private static int compare(Object a, Object b) {
        return PyValues.eq(a, b) ? 0 : PyValues.compare(a, b, "<");
    }

    private static Object extreme(List<Object> items, Args a, boolean max) {
        if (items.isEmpty()) {
            return PyFilter.UNDEFINED;
        }
        Comparator<Object> order = order(a.optBool(0, "case_sensitive", false), a.opt(1, "attribute", null));
        Object best = items.get(0);
        for (Object item : items.subList(1, items.size())) {
            int c = order.compare(item, best);
            if (max ? c > 0 : c < 0) {
                best = item;
            }
        }
        return best;
    }

    private static Object groupby(Object v, Args a, PyFilter.Input in) {
        Object attribute = a.get(0, "attribute");
        Object fallback = a.opt(1, "default", null);
        boolean caseSensitive = a.optBool(2, "case_sensitive", false);
        List<Object> sorted = items(v, in);
        sorted.sort((x, y) -> compare(groupKey(x, attribute, fallback, caseSensitive),
                groupKey(y, attribute, fallback, caseSensitive)));
        List<Object> groups = new ArrayList<>();
        List<Object> current = null;
        Object currentKey = null;
        for (Object item : sorted) {
            Object k = groupKey(item, attribute, fallback, caseSensitive);
            if (current == null || !PyValues.eq(k, currentKey)) {
                current = new ArrayList<>();
                currentKey = k;
                groups.add(new Group(groupKey(item, attribute, fallback, true), current));
            }
            current.add(item);
        }
        return groups;
    }

    private static Object groupKey(Object item, Object attribute, Object fallback, boolean caseSensitive) {
        Presence p = Attributes.lookup(item, attribute);
        Object k = p.present() ? p.value() : fallback;
        return !caseSensitive && PyValues.isString(k) ? PyValues.string(k).toLowerCase(Locale.ROOT) : k;
    }

    /** groupby's (grouper, list) pair, readable as a pair and by those two names. */
    static final class Group extends PyTuple {
        private final Object grouper;
        private final List<Object> list;

        Group(Object grouper, List<Object> list) {
            super(java.util.Arrays.asList(grouper, list));
            this.grouper = grouper;
            this.list = list;
        }

        /** The attribute {@code name} (grouper or list), or null. */
        Object attribute(String name) {
            return switch (name) {
                case "grouper" -> grouper;
                case "list" -> list;
                default -> null;
            };
        }
    }
}
