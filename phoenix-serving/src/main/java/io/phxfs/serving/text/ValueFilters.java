package io.phxfs.serving.text;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;

/**
 * Jinja2's value filters: default (d), int, float, round, abs, and transformers' own tojson
 * ({@code json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)},
 * which unlike Jinja2's escapes no HTML characters).
 */
final class ValueFilters {
    private ValueFilters() {
    }

    static List<PyFilter> all() {
        List<PyFilter> out = new ArrayList<>();
        PyFilter.Body fallback = (v, a, in) -> {
            Object alternative = a.opt(0, "default_value", "");
            boolean onFalse = a.optBool(1, "boolean", false);
            if (v == null && !in.defined() || onFalse && !PyValues.truthy(v)) {
                return alternative;
            }
            return v;
        };
        out.add(new PyFilter("default", fallback));
        out.add(new PyFilter("d", fallback));
        out.add(new PyFilter("int", ValueFilters::toInt));
        out.add(new PyFilter("float", (v, a, in) -> {
            Object fb = a.opt(0, "default", 0.0);
            if (PyValues.isNumber(v)) {
                return PyNumbers.toDouble(v);
            }
            if (PyValues.isString(v)) {
                try {
                    return Double.parseDouble(PyValues.string(v).strip().replace("_", ""));
                } catch (NumberFormatException e) {
                    return fb;
                }
            }
            return fb;
        }));
        out.add(new PyFilter("round", (v, a, in) -> {
            int precision = a.optInt(0, "precision", 0);
            String method = a.optString(1, "method");
            method = method == null ? "common" : method;
            if (!PyValues.isNumber(v)) {
                throw PyErrors.type("type " + PyValues.typeName(v) + " doesn't define __round__ method");
            }
            RoundingMode mode = switch (method) {
                case "common" -> RoundingMode.HALF_EVEN;
                case "ceil" -> RoundingMode.CEILING;
                case "floor" -> RoundingMode.FLOOR;
                default -> throw PyErrors.fail("FilterArgumentError: method must be common, ceil or floor");
            };
            if (PyNumbers.isInt(v) && method.equals("common")) {
                return v;
            }
            return new BigDecimal(PyNumbers.toDouble(v)).setScale(precision, mode).doubleValue();
        }));
        out.add(new PyFilter("abs", (v, a, in) -> {
            if (!PyValues.isNumber(v)) {
                throw PyErrors.type("bad operand type for abs(): '" + PyValues.typeName(v) + "'");
            }
            return PyNumbers.compare(v, 0L) < 0 ? PyNumbers.neg(v) : PyNumbers.isInt(v) ? PyNumbers.add(v, 0L) : v;
        }));
        out.add(new PyFilter("tojson", ValueFilters::tojson));
        return out;
    }

    private static Object toInt(Object v, Args a, PyFilter.Input in) {
        Object fb = a.opt(0, "default", 0L);
        int base = a.optInt(1, "base", 10);
        if (PyNumbers.isInt(v)) {
            return PyNumbers.add(v, 0L);
        }
        if (PyValues.isFloat(v)) {
            return PyNumbers.normalize(new BigDecimal(((Number) v).doubleValue()).toBigInteger());
        }
        if (PyValues.isString(v)) {
            String s = PyValues.string(v).strip().replace("_", "");
            try {
                if (base == 10) {
                    return PyNumbers.normalize(new BigInteger(s));
                }
                String digits = s.toLowerCase(java.util.Locale.ROOT);
                if (base == 16 && digits.startsWith("0x") || base == 8 && digits.startsWith("0o")
                        || base == 2 && digits.startsWith("0b")) {
                    digits = digits.substring(2);
                }
                return PyNumbers.normalize(new BigInteger(digits, base));
            } catch (NumberFormatException e) {
                try {
                    return PyNumbers.normalize(new BigDecimal(Double.parseDouble(s)).toBigInteger());
                } catch (NumberFormatException e2) {
                    return fb;
                }
            }
        }
        return fb;
    }

    private static Object tojson(Object v, Args a, PyFilter.Input in) {
        if (v == null && !in.defined()) {
            throw PyErrors.type("Object of type Undefined is not JSON serializable");
        }
        boolean ensureAscii = a.optBool(0, "ensure_ascii", false);
        Object indent = a.opt(1, "indent", null);
        Object separators = a.opt(2, "separators", null);
        boolean sortKeys = a.optBool(3, "sort_keys", false);
        String indentText = null;
        if (PyValues.isString(indent)) {
            indentText = PyValues.string(indent);
        } else if (indent != null) {
            indentText = " ".repeat(Math.max(0, (int) PyNumbers.toDouble(indent)));
        }
        String[] seps = null;
        if (separators != null) {
            List<Object> s = PyValues.iterate(PyValues.unwrap(separators));
            if (s.size() != 2) {
                throw PyErrors.value("separators must be an (item_separator, key_separator) pair");
            }
            seps = new String[] {PyRepr.str(s.get(0)), PyRepr.str(s.get(1))};
        }
        return new PyJson(indentText, seps, sortKeys, ensureAscii).dumps(PyValues.unwrap(v));
    }
}
