package io.phxfs.serving.text;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Python's two string formattings: {@code 'a %s b' % args} (also the format filter) and
 * {@code '{} and {name}'.format(...)}, with the common conversions and format specs. Floats
 * round half-even on their exact binary value, as Python's do.
 */
final class PyFormat {
    private PyFormat() {
    }

    /** {@code format % args}: a tuple gives the positional values, a dict the named ones. */
    static String percent(String format, Object args) {
        List<Object> values = args instanceof PyTuple t ? t : java.util.Arrays.asList(args);
        Map<?, ?> named = args instanceof Map<?, ?> m ? m : null;
        StringBuilder out = new StringBuilder();
        int next = 0;
        int i = 0;
        while (i < format.length()) {
            char c = format.charAt(i++);
            if (c != '%') {
                out.append(c);
                continue;
            }
            if (i >= format.length()) {
                throw PyErrors.value("incomplete format");
            }
            Object value = null;
            boolean haveValue = false;
            if (format.charAt(i) == '(') {
                int close = format.indexOf(')', i);
                if (close < 0 || named == null) {
                    throw PyErrors.type("format requires a mapping");
                }
                value = named.get(format.substring(i + 1, close));
                haveValue = true;
                i = close + 1;
            }
            int specStart = i;
            while (i < format.length() && "-+ 0#".indexOf(format.charAt(i)) >= 0) {
                i++;
            }
            String flags = format.substring(specStart, i);
            int widthStart = i;
            while (i < format.length() && Character.isDigit(format.charAt(i))) {
                i++;
            }
            int width = i > widthStart ? Integer.parseInt(format.substring(widthStart, i)) : -1;
            int precision = -1;
            if (i < format.length() && format.charAt(i) == '.') {
                int p = ++i;
                while (i < format.length() && Character.isDigit(format.charAt(i))) {
                    i++;
                }
                precision = i > p ? Integer.parseInt(format.substring(p, i)) : 0;
            }
            while (i < format.length() && "hlL".indexOf(format.charAt(i)) >= 0) {
                i++;
            }
            if (i >= format.length()) {
                throw PyErrors.value("incomplete format");
            }
            char type = format.charAt(i++);
            if (type == '%') {
                out.append('%');
                continue;
            }
            if (!haveValue) {
                if (next >= values.size()) {
                    throw PyErrors.type("not enough arguments for format string");
                }
                value = values.get(next++);
            }
            Spec spec = new Spec(' ', flags.contains("-") ? '<' : flags.contains("0") && type != 's' && type != 'r'
                    ? '=' : '>', flags.contains("+") ? '+' : flags.contains(" ") ? ' ' : '-', flags.contains("#"),
                    flags.contains("0") && !flags.contains("-") ? '0' : ' ', width, precision, type);
            out.append(convert(value, spec, true));
        }
        if (named == null && next < values.size()) {
            throw PyErrors.type("not all arguments converted during string formatting");
        }
        return out.toString();
    }

    /** {@code format.format(*positional, **keywords)}. */
    static String format(String format, List<Object> positional, Map<String, Object> keywords) {
        StringBuilder out = new StringBuilder();
        int auto = 0;
        int i = 0;
        while (i < format.length()) {
            char c = format.charAt(i);
            if (c == '{' && i + 1 < format.length() && format.charAt(i + 1) == '{'
                    || c == '}' && i + 1 < format.length() && format.charAt(i + 1) == '}') {
                out.append(c);
                i += 2;
                continue;
            }
            if (c == '}') {
                throw PyErrors.value("Single '}' encountered in format string");
            }
            if (c != '{') {
                out.append(c);
                i++;
                continue;
            }
            int close = format.indexOf('}', i);
            if (close < 0) {
                throw PyErrors.value("Single '{' encountered in format string");
            }
            String field = format.substring(i + 1, close);
            i = close + 1;
            String specText = "";
            int colon = field.indexOf(':');
            if (colon >= 0) {
                specText = field.substring(colon + 1);
                field = field.substring(0, colon);
            }
            char conversion = 0;
            int bang = field.indexOf('!');
            if (bang >= 0) {
                conversion = field.length() > bang + 1 ? field.charAt(bang + 1) : 0;
                field = field.substring(0, bang);
            }
            Object value = lookup(field.isEmpty() ? String.valueOf(auto++) : field, positional, keywords);
            if (conversion == 'r' || conversion == 'a') {
                value = PyRepr.repr(value);
            } else if (conversion == 's') {
                value = value == null ? "None" : PyRepr.str(value);
            }
            out.append(convert(value, Spec.parse(specText), false));
        }
        return out.toString();
    }

    private static Object lookup(String field, List<Object> positional, Map<String, Object> keywords) {
        int end = 0;
        while (end < field.length() && field.charAt(end) != '.' && field.charAt(end) != '[') {
            end++;
        }
        String head = field.substring(0, end);
        Object value;
        if (!head.isEmpty() && head.chars().allMatch(Character::isDigit)) {
            int index = Integer.parseInt(head);
            if (index >= positional.size()) {
                throw PyErrors.fail("IndexError: Replacement index " + index + " out of range for positional args tuple");
            }
            value = positional.get(index);
        } else {
            if (!keywords.containsKey(head)) {
                throw PyErrors.fail("KeyError: '" + head + "'");
            }
            value = keywords.get(head);
        }
        String rest = field.substring(end);
        while (!rest.isEmpty()) {
            if (rest.charAt(0) == '.') {
                int next = 1;
                while (next < rest.length() && rest.charAt(next) != '.' && rest.charAt(next) != '[') {
                    next++;
                }
                value = value instanceof Map<?, ?> m ? m.get(rest.substring(1, next)) : null;
                rest = rest.substring(next);
            } else {
                int close = rest.indexOf(']');
                String key = rest.substring(1, close);
                if (value instanceof Map<?, ?> m) {
                    value = m.get(key);
                } else if (PyValues.isList(value) && key.chars().allMatch(Character::isDigit)) {
                    value = PyValues.iterate(value).get(Integer.parseInt(key));
                } else {
                    value = null;
                }
                rest = rest.substring(close + 1);
            }
        }
        return value;
    }

    /** A format spec: {@code [[fill]align][sign][#][0][width][.precision][type]}. */
    record Spec(char fill, char align, char sign, boolean alternate, char zero, int width, int precision, char type) {
        static Spec parse(String s) {
            int i = 0;
            char fill = ' ';
            char align = 0;
            if (s.length() >= 2 && "<>=^".indexOf(s.charAt(1)) >= 0) {
                fill = s.charAt(0);
                align = s.charAt(1);
                i = 2;
            } else if (!s.isEmpty() && "<>=^".indexOf(s.charAt(0)) >= 0) {
                align = s.charAt(0);
                i = 1;
            }
            char sign = '-';
            if (i < s.length() && "+- ".indexOf(s.charAt(i)) >= 0) {
                sign = s.charAt(i++);
            }
            boolean alternate = false;
            if (i < s.length() && s.charAt(i) == '#') {
                alternate = true;
                i++;
            }
            char zero = ' ';
            if (i < s.length() && s.charAt(i) == '0') {
                zero = '0';
                i++;
            }
            int w = i;
            while (i < s.length() && Character.isDigit(s.charAt(i))) {
                i++;
            }
            int width = i > w ? Integer.parseInt(s.substring(w, i)) : -1;
            while (i < s.length() && (s.charAt(i) == ',' || s.charAt(i) == '_')) {
                i++;
            }
            int precision = -1;
            if (i < s.length() && s.charAt(i) == '.') {
                int p = ++i;
                while (i < s.length() && Character.isDigit(s.charAt(i))) {
                    i++;
                }
                precision = Integer.parseInt(s.substring(p, i));
            }
            char type = i < s.length() ? s.charAt(i) : 0;
            if (zero == '0' && align == 0) {
                fill = '0';
                align = '=';
            }
            return new Spec(fill, align, sign, alternate, zero, width, precision, type);
        }
    }

    private static String convert(Object value, Spec spec, boolean percentStyle) {
        char type = spec.type();
        String body;
        boolean numeric = false;
        boolean negative = false;
        switch (type) {
            case 'r', 'a' -> body = PyRepr.repr(value);
            case 's', 0 -> {
                if (type == 0 && PyValues.isNumber(value) && !(value instanceof Boolean) && spec.precision() >= 0) {
                    return convert(value, new Spec(spec.fill(), spec.align(), spec.sign(), spec.alternate(), spec.zero(),
                            spec.width(), spec.precision(), 'g'), percentStyle);
                }
                body = value == null ? "None" : PyRepr.str(value);
                if (spec.precision() >= 0 && !PyValues.isNumber(value)) {
                    body = body.substring(0, body.offsetByCodePoints(0, Math.min(spec.precision(),
                            body.codePointCount(0, body.length()))));
                }
                numeric = PyValues.isNumber(value) && type == 0;
            }
            case 'd', 'i', 'u' -> {
                BigInteger n = integer(value, type);
                negative = n.signum() < 0;
                body = n.abs().toString();
                numeric = true;
            }
            case 'x', 'X', 'o', 'b' -> {
                BigInteger n = integer(value, type);
                negative = n.signum() < 0;
                int radix = type == 'o' ? 8 : type == 'b' ? 2 : 16;
                body = n.abs().toString(radix);
                if (type == 'X') {
                    body = body.toUpperCase(Locale.ROOT);
                }
                if (spec.alternate()) {
                    body = "0" + (type == 'o' ? "o" : type == 'b' ? "b" : String.valueOf(type)) + body;
                }
                numeric = true;
            }
            case 'c' -> body = PyNumbers.isInt(value) ? Character.toString((int) PyNumbers.toDouble(value)) : PyRepr.str(value);
            case 'f', 'F', 'e', 'E', 'g', 'G', '%' -> {
                double d = floatValue(value);
                negative = d < 0 || d == 0 && 1 / d < 0;
                body = floatBody(Math.abs(d), type, spec.precision() < 0 ? 6 : spec.precision(), spec.alternate());
                numeric = true;
            }
            default -> throw PyErrors.value("unsupported format character '" + type + "'");
        }
        String sign = numeric ? (negative ? "-" : spec.sign() == '+' ? "+" : spec.sign() == ' ' ? " " : "") : "";
        int length = body.codePointCount(0, body.length()) + sign.length();
        if (spec.width() <= length) {
            return sign + body;
        }
        int pad = spec.width() - length;
        char align = spec.align() != 0 ? spec.align() : numeric ? '>' : '<';
        char fill = percentStyle ? (align == '=' ? '0' : ' ') : spec.fill();
        String padding = String.valueOf(fill).repeat(pad);
        return switch (align) {
            case '<' -> sign + body + padding;
            case '=' -> sign + padding + body;
            case '^' -> padding.substring(0, pad / 2) + sign + body + padding.substring(pad / 2);
            default -> padding + sign + body;
        };
    }

    private static BigInteger integer(Object value, char type) {
        if (PyNumbers.isInt(value)) {
            return PyNumbers.bigInt(value);
        }
        if (PyValues.isFloat(value)) {
            return new BigDecimal(((Number) value).doubleValue()).toBigInteger();
        }
        throw PyErrors.type("%" + type + " format: a real number is required, not " + PyValues.typeName(value));
    }

    private static double floatValue(Object value) {
        if (PyValues.isNumber(value)) {
            return PyNumbers.toDouble(value);
        }
        throw PyErrors.type("must be real number, not " + PyValues.typeName(value));
    }

    private static String floatBody(double d, char type, int precision, boolean alternate) {
        if (Double.isNaN(d)) {
            return Character.isUpperCase(type) ? "NAN" : "nan";
        }
        if (Double.isInfinite(d)) {
            return Character.isUpperCase(type) ? "INF" : "inf";
        }
        switch (type) {
            case 'f', 'F' -> {
                return fixed(d, precision);
            }
            case '%' -> {
                return fixed(d * 100, precision) + "%";
            }
            case 'e', 'E' -> {
                String s = exponential(d, precision);
                return type == 'E' ? s.toUpperCase(Locale.ROOT) : s;
            }
            default -> {
                int p = precision == 0 ? 1 : precision;
                int exponent = d == 0 ? 0 : exponentOf(d, p);
                String s;
                if (exponent >= -4 && exponent < p) {
                    s = fixed(d, p - 1 - exponent);
                } else {
                    s = exponential(d, p - 1);
                }
                if (!alternate) {
                    s = stripZeros(s);
                }
                return type == 'G' ? s.toUpperCase(Locale.ROOT) : s;
            }
        }
    }

    private static String fixed(double d, int precision) {
        return new BigDecimal(d).setScale(precision, RoundingMode.HALF_EVEN).toPlainString();
    }

    private static int exponentOf(double d, int significant) {
        BigDecimal rounded = new BigDecimal(d).round(new java.math.MathContext(significant, RoundingMode.HALF_EVEN));
        return rounded.precision() - rounded.scale() - 1;
    }

    private static String exponential(double d, int precision) {
        if (d == 0) {
            return (precision > 0 ? "0." + "0".repeat(precision) : "0") + "e+00";
        }
        BigDecimal rounded = new BigDecimal(d).round(new java.math.MathContext(precision + 1, RoundingMode.HALF_EVEN));
        int exponent = rounded.precision() - rounded.scale() - 1;
        String digits = rounded.unscaledValue().toString();
        digits = (digits + "0".repeat(Math.max(0, precision + 1 - digits.length()))).substring(0, precision + 1);
        String mantissa = precision > 0 ? digits.charAt(0) + "." + digits.substring(1) : digits;
        return mantissa + "e" + (exponent < 0 ? "-" : "+") + String.format("%02d", Math.abs(exponent));
    }

    private static String stripZeros(String s) {
        int e = s.indexOf('e');
        String mantissa = e >= 0 ? s.substring(0, e) : s;
        String exponent = e >= 0 ? s.substring(e) : "";
        if (mantissa.indexOf('.') >= 0) {
            mantissa = mantissa.replaceAll("0+$", "");
            if (mantissa.endsWith(".")) {
                mantissa = mantissa.substring(0, mantissa.length() - 1);
            }
        }
        return mantissa + exponent;
    }
}
