package io.phxfs.serving.text;

import com.hubspot.jinjava.objects.Namespace;
import com.hubspot.jinjava.objects.collections.PyMap;
import java.math.BigDecimal;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Python's str() and repr() of template values, which is what Jinja2 prints: {@code True},
 * {@code 2.5}, {@code 1e+16}, {@code ['a', 1]}, {@code {'k': 'v'}}. A null at the top level
 * prints as nothing: jinjava has one null for both None and undefined, and an undefined value
 * (which prints as nothing) is what templates meet far more often.
 */
final class PyRepr {
    private PyRepr() {
    }

    /** str(v), with null as the empty string. */
    static String str(Object v) {
        if (v == null) {
            return "";
        }
        if (PyValues.isString(v)) {
            return PyValues.string(v);
        }
        return repr(v);
    }

    static String repr(Object v) {
        StringBuilder out = new StringBuilder();
        repr(v, out);
        return out.toString();
    }

    private static void repr(Object v, StringBuilder out) {
        if (v == null) {
            out.append("None");
        } else if (v instanceof Boolean b) {
            out.append(b ? "True" : "False");
        } else if (PyValues.isString(v)) {
            quote(PyValues.string(v), out);
        } else if (PyValues.isFloat(v)) {
            out.append(v instanceof BigDecimal d ? floatRepr(d.doubleValue()) : floatRepr(((Number) v).doubleValue()));
        } else if (v instanceof Number) {
            out.append(v);
        } else if (v instanceof Map<?, ?> m) {
            Map<?, ?> inner = m instanceof PyMap p ? p.toMap() : m;
            if (inner instanceof Namespace) {
                out.append("<Namespace ");
            }
            out.append('{');
            Iterator<? extends Map.Entry<?, ?>> it = m.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> e = it.next();
                repr(e.getKey(), out);
                out.append(": ");
                repr(e.getValue(), out);
                if (it.hasNext()) {
                    out.append(", ");
                }
            }
            out.append('}');
            if (inner instanceof Namespace) {
                out.append('>');
            }
        } else if (PyValues.isList(v)) {
            List<Object> items = PyValues.iterate(v);
            boolean tuple = PyValues.unwrap(v) instanceof PyTuple;
            out.append(tuple ? '(' : '[');
            for (int i = 0; i < items.size(); i++) {
                if (i > 0) {
                    out.append(", ");
                }
                repr(items.get(i), out);
            }
            out.append(tuple ? (items.size() == 1 ? ",)" : ")") : "]");
        } else if (v instanceof Map.Entry<?, ?> e) {
            out.append('(');
            repr(e.getKey(), out);
            out.append(", ");
            repr(e.getValue(), out);
            out.append(')');
        } else {
            out.append(v);
        }
    }

    /** Python's repr of a str: single quotes unless the text has one and no double quote. */
    static void quote(String s, StringBuilder out) {
        char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        out.append(q);
        for (int i = 0; i < s.length();) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            switch (cp) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (cp == q) {
                        out.append('\\').append(q);
                    } else if (printable(cp)) {
                        out.appendCodePoint(cp);
                    } else if (cp < 0x100) {
                        out.append(String.format("\\x%02x", cp));
                    } else if (cp < 0x10000) {
                        out.append(String.format("\\u%04x", cp));
                    } else {
                        out.append(String.format("\\U%08x", cp));
                    }
                }
            }
        }
        out.append(q);
    }

    /** str.isprintable() for one character: not a control, format, separator (but space) or unassigned. */
    private static boolean printable(int cp) {
        if (cp == ' ') {
            return true;
        }
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                    Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                    Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }

    /**
     * Python's repr of a float: the shortest digits that read back the same (which Java's
     * Double.toString also finds), fixed notation for exponents from -4 to 15, else
     * {@code 1.5e+16} style.
     */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return 1 / d < 0 ? "-0.0" : "0.0";
        }
        BigDecimal exact = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        String sign = d < 0 ? "-" : "";
        int exponent = exact.precision() - exact.scale() - 1;
        if (exponent >= -4 && exponent < 16) {
            String plain = exact.toPlainString();
            return sign + (plain.indexOf('.') < 0 ? plain + ".0" : plain);
        }
        String digits = exact.unscaledValue().toString();
        String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + String.format("%02d", Math.abs(exponent));
    }
}
