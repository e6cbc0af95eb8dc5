package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.List;

/** Python's {@code seq[start:stop:step]} on strings (by code point), lists and tuples. */
final class PySlices {
    private PySlices() {
    }

    static Object slice(Object value, Long start, Long stop, Long step) {
        long s = step == null ? 1 : step;
        if (s == 0) {
            throw PyErrors.value("slice step cannot be zero");
        }
        if (PyValues.isString(value)) {
            String text = PyValues.string(value);
            int[] cps = text.codePoints().toArray();
            StringBuilder out = new StringBuilder();
            for (long i : indices(cps.length, start, stop, s)) {
                out.appendCodePoint(cps[(int) i]);
            }
            return out.toString();
        }
        if (PyValues.isList(value)) {
            List<Object> items = PyValues.iterate(value);
            List<Object> out = new ArrayList<>();
            for (long i : indices(items.size(), start, stop, s)) {
                out.add(items.get((int) i));
            }
            return PyValues.unwrap(value) instanceof PyTuple ? new PyTuple(out) : out;
        }
        throw PyErrors.type("'" + PyValues.typeName(value) + "' object is not subscriptable");
    }

    /** slice.indices(length) walked: the positions a slice takes. */
    private static List<Long> indices(int length, Long start, Long stop, long step) {
        long lower = step < 0 ? -1 : 0;
        long upper = step < 0 ? length - 1 : length;
        long a = start == null ? (step < 0 ? upper : lower) : bound(start, length, lower, upper);
        long b = stop == null ? (step < 0 ? lower : upper) : bound(stop, length, lower, upper);
        List<Long> out = new ArrayList<>();
        if (step > 0) {
            for (long i = a; i < b; i += step) {
                out.add(i);
            }
        } else {
            for (long i = a; i > b; i += step) {
                out.add(i);
            }
        }
        return out;
    }

    private static long bound(long i, int length, long lower, long upper) {
        if (i < 0) {
            return Math.max(i + length, lower);
        }
        return Math.min(i, upper);
    }
}
