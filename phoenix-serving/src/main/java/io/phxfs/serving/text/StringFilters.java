package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Jinja2's text filters: upper, lower, title, capitalize, trim, replace, truncate, wordcount,
 * center, indent, striptags, format, string, safe, escape and urlencode. Each turns its input
 * into text the way Jinja2's soft_str does (None prints as "None", undefined as nothing).
 */
final class StringFilters {
    private static final Pattern WORD_BEGINNING = Pattern.compile("([-\\s({\\[<]+)");
    private static final Pattern WORD = Pattern.compile("\\w+", Pattern.UNICODE_CHARACTER_CLASS);
    private static final Pattern TAGS = Pattern.compile("(<!--.*?-->|<[^>]*>)", Pattern.DOTALL);

    private StringFilters() {
    }

    static List<PyFilter> all() {
        List<PyFilter> out = new ArrayList<>();
        out.add(new PyFilter("upper", (v, a, in) -> in.text(v).toUpperCase(Locale.ROOT)));
        out.add(new PyFilter("lower", (v, a, in) -> in.text(v).toLowerCase(Locale.ROOT)));
        out.add(new PyFilter("title", (v, a, in) -> title(in.text(v))));
        out.add(new PyFilter("capitalize", (v, a, in) -> PyStrings.capitalize(in.text(v))));
        out.add(new PyFilter("trim", (v, a, in) -> PyStrings.strip(in.text(v), a.optString(0, "chars"), true, true)));
        out.add(new PyFilter("replace", (v, a, in) -> PyStrings.replace(in.text(v), PyRepr.str(a.get(0, "old")),
                PyRepr.str(a.get(1, "new")), a.optInt(2, "count", -1))));
        out.add(new PyFilter("truncate", StringFilters::truncate));
        out.add(new PyFilter("wordcount", (v, a, in) -> {
            Matcher m = WORD.matcher(in.text(v));
            long n = 0;
            while (m.find()) {
                n++;
            }
            return n;
        }));
        out.add(new PyFilter("center", (v, a, in) -> PyStrings.pad(in.text(v), a.optInt(0, "width", 80), null, 'c')));
        out.add(new PyFilter("indent", StringFilters::indent));
        out.add(new PyFilter("striptags", (v, a, in) -> unescape(String.join(" ",
                PyStrings.split(TAGS.matcher(in.text(v)).replaceAll(""), null, -1).stream().map(Object::toString).toList()))));
        out.add(new PyFilter("format", (v, a, in) -> {
            if (!a.positional().isEmpty() && !a.keywords().isEmpty()) {
                throw PyErrors.fail("FilterArgumentError: can't handle positional and keyword arguments at the same time");
            }
            Object args = a.keywords().isEmpty() ? new PyTuple(a.positional()) : a.keywords();
            return PyFormat.percent(in.text(v), args);
        }));
        out.add(new PyFilter("string", (v, a, in) -> in.text(v)));
        out.add(new PyFilter("safe", (v, a, in) -> v == null ? in.text(v) : v));
        PyFilter.Body escape = (v, a, in) -> escape(in.text(v));
        out.add(new PyFilter("escape", escape));
        out.add(new PyFilter("e", escape));
        out.add(new PyFilter("forceescape", escape));
        out.add(new PyFilter("urlencode", (v, a, in) -> urlencode(v, in)));
        return out;
    }

    /** Jinja2's title filter: capitalizes after spaces, dashes and opening brackets (not after apostrophes). */
    static String title(String s) {
        StringBuilder out = new StringBuilder();
        Matcher m = WORD_BEGINNING.matcher(s);
        int last = 0;
        List<String> parts = new ArrayList<>();
        while (m.find()) {
            parts.add(s.substring(last, m.start()));
            parts.add(m.group());
            last = m.end();
        }
        parts.add(s.substring(last));
        for (String item : parts) {
            if (!item.isEmpty()) {
                int first = item.codePointAt(0);
                out.append(Character.toString(first).toUpperCase(Locale.ROOT))
                        .append(item.substring(Character.charCount(first)).toLowerCase(Locale.ROOT));
            }
        }
        return out.toString();
    }

    private static Object truncate(Object v, Args a, PyFilter.Input in) {
        String s = in.text(v);
        int length = a.optInt(0, "length", 255);
        boolean killwords = a.optBool(1, "killwords", false);
        String end = a.optString(2, "end");
        end = end == null ? "..." : end;
        int leeway = a.optInt(3, "leeway", 5);
        int n = s.codePointCount(0, s.length());
        if (n <= length + leeway) {
            return s;
        }
        String head = s.substring(0, s.offsetByCodePoints(0, Math.max(0, length - end.length())));
        if (killwords) {
            return head + end;
        }
        int space = head.lastIndexOf(' ');
        return (space >= 0 ? head.substring(0, space) : head) + end;
    }

    private static Object indent(Object v, Args a, PyFilter.Input in) {
        Object width = a.opt(0, "width", 4L);
        String indention = PyValues.isString(width) ? PyValues.string(width) : " ".repeat((int) PyNumbers.toDouble(width));
        boolean first = a.optBool(1, "first", false);
        boolean blank = a.optBool(2, "blank", false);
        List<Object> lines = PyStrings.split(in.text(v) + "\n", "\n", -1);
        lines.remove(lines.size() - 1);
        StringBuilder rv = new StringBuilder();
        if (blank) {
            for (int i = 0; i < lines.size(); i++) {
                if (i > 0) {
                    rv.append('\n').append(indention);
                }
                rv.append(lines.get(i));
            }
        } else {
            rv.append(lines.isEmpty() ? "" : lines.get(0));
            for (int i = 1; i < lines.size(); i++) {
                String line = (String) lines.get(i);
                rv.append('\n').append(line.isEmpty() ? line : indention + line);
            }
        }
        return first ? indention + rv : rv.toString();
    }

    static String escape(String s) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&#34;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    private static String unescape(String s) {
        return s.replace("&lt;", "<").replace("&gt;", ">").replace("&#34;", "\"").replace("&quot;", "\"")
                .replace("&#39;", "'").replace("&amp;", "&");
    }

    private static Object urlencode(Object v, PyFilter.Input in) {
        Object u = PyValues.unwrap(v);
        if (u instanceof Map<?, ?> m) {
            List<String> pairs = new ArrayList<>();
            m.forEach((k, x) -> pairs.add(quote(PyRepr.str(k), "") + "=" + quote(PyRepr.str(x), "")));
            return String.join("&", pairs);
        }
        return quote(in.text(v), "/");
    }

    private static String quote(String s, String safe) {
        StringBuilder out = new StringBuilder();
        for (byte b : s.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if (c < 0x80 && (Character.isLetterOrDigit(c) || "_.-~".indexOf(c) >= 0 || safe.indexOf(c) >= 0)) {
                out.append((char) c);
            } else {
                out.append(String.format("%%%02X", c));
            }
        }
        return out.toString();
    }
}
