package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Python's str methods, which chat templates call directly ({@code content.strip()},
 * {@code .startswith('<tool_response>')}, {@code .split('</think>')[-1]}), with Python's
 * whitespace (str.isspace, wider than Java's trim) and code-point semantics.
 */
final class PyStrings {
    private PyStrings() {
    }

    /** The str methods that accept keyword arguments. */
    private static final java.util.Set<String> KEYWORD_METHODS = java.util.Set.of("split", "rsplit", "splitlines", "format");

    /** The str methods templates may call; anything else is an undefined attribute, as in Jinja2. */
    static boolean has(String method) {
        return switch (method) {
            case "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper",
                    "lower", "title", "capitalize", "swapcase", "casefold", "replace", "find", "rfind", "index",
                    "rindex", "count", "join", "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace",
                    "islower", "isupper", "istitle", "zfill", "ljust", "rjust", "center", "partition", "rpartition",
                    "removeprefix", "removesuffix", "format" -> true;
            default -> false;
        };
    }

    static Object call(String s, String method, Args a) {
        if (!a.keywords().isEmpty() && !KEYWORD_METHODS.contains(method)) {
            throw PyErrors.type("str." + method + "() takes no keyword arguments");
        }
        return switch (method) {
            case "strip" -> strip(s, a.optString(0, "chars"), true, true);
            case "lstrip" -> strip(s, a.optString(0, "chars"), true, false);
            case "rstrip" -> strip(s, a.optString(0, "chars"), false, true);
            case "split" -> split(s, a.optString(0, "sep"), a.optInt(1, "maxsplit", -1));
            case "rsplit" -> rsplit(s, a.optString(0, "sep"), a.optInt(1, "maxsplit", -1));
            case "splitlines" -> splitlines(s, PyValues.truthy(a.opt(0, "keepends", false)));
            case "startswith" -> affix(s, a.get(0, "prefix"), a.optInt(1, "start", 0), a.opt(2, "end", null), true);
            case "endswith" -> affix(s, a.get(0, "suffix"), a.optInt(1, "start", 0), a.opt(2, "end", null), false);
            case "upper" -> s.toUpperCase(Locale.ROOT);
            case "lower" -> s.toLowerCase(Locale.ROOT);
            case "casefold" -> s.toUpperCase(Locale.ROOT).toLowerCase(Locale.ROOT);
            case "title" -> title(s);
            case "capitalize" -> capitalize(s);
            case "swapcase" -> swapcase(s);
            case "replace" -> replace(s, a.string(0, "old"), a.string(1, "new"), a.optInt(2, "count", -1));
            case "find" -> find(s, a.string(0, "sub"), a.optInt(1, "start", 0), a.opt(2, "end", null), false);
            case "rfind" -> find(s, a.string(0, "sub"), a.optInt(1, "start", 0), a.opt(2, "end", null), true);
            case "index", "rindex" -> {
                int i = find(s, a.string(0, "sub"), a.optInt(1, "start", 0), a.opt(2, "end", null),
                        method.equals("rindex"));
                if (i < 0) {
                    throw PyErrors.value("substring not found");
                }
                yield (long) i;
            }
            case "count" -> (long) count(s, a.string(0, "sub"));
            case "join" -> join(s, a.get(0, "iterable"));
            case "isdigit", "isnumeric", "isdecimal" -> !s.isEmpty() && s.codePoints().allMatch(Character::isDigit);
            case "isalpha" -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetter);
            case "isalnum" -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
            case "isspace" -> !s.isEmpty() && s.codePoints().allMatch(PyStrings::isSpace);
            case "islower" -> hasCased(s) && s.equals(s.toLowerCase(Locale.ROOT));
            case "isupper" -> hasCased(s) && s.equals(s.toUpperCase(Locale.ROOT));
            case "istitle" -> hasCased(s) && s.equals(title(s));
            case "zfill" -> zfill(s, a.intValue(0, "width"));
            case "ljust" -> pad(s, a.intValue(0, "width"), a.optString(1, "fillchar"), 'l');
            case "rjust" -> pad(s, a.intValue(0, "width"), a.optString(1, "fillchar"), 'r');
            case "center" -> pad(s, a.intValue(0, "width"), a.optString(1, "fillchar"), 'c');
            case "partition" -> partition(s, a.string(0, "sep"), false);
            case "rpartition" -> partition(s, a.string(0, "sep"), true);
            case "removeprefix" -> s.startsWith(a.string(0, "prefix")) ? s.substring(a.string(0, "prefix").length()) : s;
            case "removesuffix" -> {
                String suffix = a.string(0, "suffix");
                yield !suffix.isEmpty() && s.endsWith(suffix) ? s.substring(0, s.length() - suffix.length()) : s;
            }
            case "format" -> PyFormat.format(s, a.positional(), a.keywords());
            default -> throw PyErrors.undefined("'str object' has no attribute '" + method + "'");
        };
    }

    /** str.isspace() for one character. */
    static boolean isSpace(int cp) {
        return switch (cp) {
            case '\t', '\n', 0x0b, 0x0c, '\r', 0x1c, 0x1d, 0x1e, 0x1f, ' ', 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f,
                    0x205f, 0x3000 -> true;
            default -> cp >= 0x2000 && cp <= 0x200a;
        };
    }

    static String strip(String s, String chars, boolean left, boolean right) {
        int start = 0;
        int end = s.length();
        while (left && start < end) {
            int cp = s.codePointAt(start);
            if (!stripped(cp, chars)) {
                break;
            }
            start += Character.charCount(cp);
        }
        while (right && end > start) {
            int cp = s.codePointBefore(end);
            if (!stripped(cp, chars)) {
                break;
            }
            end -= Character.charCount(cp);
        }
        return s.substring(start, end);
    }

    private static boolean stripped(int cp, String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(Character.toString(cp)) >= 0;
    }

    static List<Object> split(String s, String sep, int maxsplit) {
        List<Object> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            while (i < s.length()) {
                while (i < s.length() && isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                if (i >= s.length()) {
                    break;
                }
                if (maxsplit >= 0 && out.size() == maxsplit) {
                    out.add(s.substring(i));
                    return out;
                }
                int j = i;
                while (j < s.length() && !isSpace(s.codePointAt(j))) {
                    j += Character.charCount(s.codePointAt(j));
                }
                out.add(s.substring(i, j));
                i = j;
            }
            return out;
        }
        if (sep.isEmpty()) {
            throw PyErrors.value("empty separator");
        }
        int from = 0;
        while (maxsplit < 0 || out.size() < maxsplit) {
            int at = s.indexOf(sep, from);
            if (at < 0) {
                break;
            }
            out.add(s.substring(from, at));
            from = at + sep.length();
        }
        out.add(s.substring(from));
        return out;
    }

    static List<Object> rsplit(String s, String sep, int maxsplit) {
        if (maxsplit < 0) {
            return split(s, sep, -1);
        }
        List<Object> out = new ArrayList<>();
        if (sep == null) {
            int end = s.length();
            while (end > 0) {
                while (end > 0 && isSpace(s.codePointBefore(end))) {
                    end -= Character.charCount(s.codePointBefore(end));
                }
                if (end == 0) {
                    break;
                }
                if (out.size() == maxsplit) {
                    out.add(0, s.substring(0, end));
                    return out;
                }
                int start = end;
                while (start > 0 && !isSpace(s.codePointBefore(start))) {
                    start -= Character.charCount(s.codePointBefore(start));
                }
                out.add(0, s.substring(start, end));
                end = start;
            }
            return out;
        }
        if (sep.isEmpty()) {
            throw PyErrors.value("empty separator");
        }
        int end = s.length();
        while (out.size() < maxsplit) {
            int at = s.lastIndexOf(sep, end - sep.length());
            if (at < 0) {
                break;
            }
            out.add(0, s.substring(at + sep.length(), end));
            end = at;
        }
        out.add(0, s.substring(0, end));
        return out;
    }

    private static List<Object> splitlines(String s, boolean keepends) {
        List<Object> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            int breakLength = 0;
            if (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') {
                breakLength = 2;
            } else if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e
                    || c == 0x85 || c == 0x2028 || c == 0x2029) {
                breakLength = 1;
            }
            if (breakLength > 0) {
                out.add(s.substring(start, keepends ? i + breakLength : i));
                i += breakLength;
                start = i;
            } else {
                i++;
            }
        }
        if (start < s.length()) {
            out.add(s.substring(start));
        }
        return out;
    }

    private static boolean affix(String s, Object affixes, int start, Object end, boolean prefix) {
        int[] range = range(s, start, end);
        String part = s.substring(range[0], Math.max(range[0], range[1]));
        if (PyValues.isList(affixes)) {
            for (Object a : PyValues.iterate(affixes)) {
                if (affix(part, requireString(a), prefix)) {
                    return true;
                }
            }
            return false;
        }
        return affix(part, requireString(affixes), prefix);
    }

    private static boolean affix(String s, String a, boolean prefix) {
        return prefix ? s.startsWith(a) : s.endsWith(a);
    }

    private static String requireString(Object o) {
        if (!PyValues.isString(o)) {
            throw PyErrors.type("expected str, got " + PyValues.typeName(o));
        }
        return PyValues.string(o);
    }

    /** Python slice bounds in code points, turned into char offsets. */
    private static int[] range(String s, int start, Object end) {
        int n = s.codePointCount(0, s.length());
        int from = clamp(start, n);
        int to = end == null ? n : clamp((int) ((Number) end).longValue(), n);
        return new int[] {s.offsetByCodePoints(0, from), s.offsetByCodePoints(0, Math.max(from, to))};
    }

    private static int clamp(int i, int n) {
        return i < 0 ? Math.max(0, i + n) : Math.min(i, n);
    }

    static String title(String s) {
        StringBuilder out = new StringBuilder(s.length());
        boolean previousCased = false;
        for (int i = 0; i < s.length();) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (previousCased) {
                out.append(Character.toString(cp).toLowerCase(Locale.ROOT));
            } else {
                out.appendCodePoint(Character.toTitleCase(cp));
            }
            previousCased = cased(cp);
        }
        return out.toString();
    }

    private static boolean cased(int cp) {
        return Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
    }

    private static boolean hasCased(String s) {
        return s.codePoints().anyMatch(PyStrings::cased);
    }

    static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int first = s.codePointAt(0);
        return Character.toString(Character.toTitleCase(first))
                + s.substring(Character.charCount(first)).toLowerCase(Locale.ROOT);
    }

    private static String swapcase(String s) {
        StringBuilder out = new StringBuilder();
        s.codePoints().forEach(cp -> out.append(Character.isUpperCase(cp) ? Character.toString(cp).toLowerCase(Locale.ROOT)
                : Character.toString(cp).toUpperCase(Locale.ROOT)));
        return out.toString();
    }

    static String replace(String s, String old, String replacement, int count) {
        if (count < 0) {
            if (old.isEmpty()) {
                return insertBetween(s, replacement, Integer.MAX_VALUE);
            }
            return s.replace(old, replacement);
        }
        if (old.isEmpty()) {
            return insertBetween(s, replacement, count);
        }
        StringBuilder out = new StringBuilder();
        int from = 0;
        for (int done = 0; done < count; done++) {
            int at = s.indexOf(old, from);
            if (at < 0) {
                break;
            }
            out.append(s, from, at).append(replacement);
            from = at + old.length();
        }
        return out.append(s.substring(from)).toString();
    }

    /** Python's replace of the empty string: the new text before every character and at the end. */
    private static String insertBetween(String s, String insert, int count) {
        StringBuilder out = new StringBuilder();
        int done = 0;
        for (int i = 0; i < s.length();) {
            if (done < count) {
                out.append(insert);
                done++;
            }
            int cp = s.codePointAt(i);
            out.appendCodePoint(cp);
            i += Character.charCount(cp);
        }
        if (done < count) {
            out.append(insert);
        }
        return out.toString();
    }

    private static int find(String s, String sub, int start, Object end, boolean last) {
        int[] range = range(s, start, end);
        String part = s.substring(range[0], range[1]);
        int at = last ? part.lastIndexOf(sub) : part.indexOf(sub);
        if (at < 0) {
            return -1;
        }
        return s.codePointCount(0, range[0] + at);
    }

    private static int count(String s, String sub) {
        if (sub.isEmpty()) {
            return s.codePointCount(0, s.length()) + 1;
        }
        int n = 0;
        for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) {
            n++;
        }
        return n;
    }

    private static String join(String sep, Object iterable) {
        StringBuilder out = new StringBuilder();
        List<Object> items = PyValues.iterate(iterable);
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) {
                out.append(sep);
            }
            out.append(requireString(items.get(i)));
        }
        return out.toString();
    }

    private static String zfill(String s, int width) {
        int n = s.codePointCount(0, s.length());
        if (n >= width) {
            return s;
        }
        String zeros = "0".repeat(width - n);
        if (!s.isEmpty() && (s.charAt(0) == '+' || s.charAt(0) == '-')) {
            return s.charAt(0) + zeros + s.substring(1);
        }
        return zeros + s;
    }

    static String pad(String s, int width, String fill, char align) {
        String f = fill == null ? " " : fill;
        int n = s.codePointCount(0, s.length());
        if (n >= width) {
            return s;
        }
        int total = width - n;
        return switch (align) {
            case 'l' -> s + f.repeat(total);
            case 'r' -> f.repeat(total) + s;
            default -> {
                // CPython puts the odd character on the left when the string's length is odd
                int left = total / 2 + (total & width & 1);
                yield f.repeat(left) + s + f.repeat(total - left);
            }
        };
    }

    private static List<Object> partition(String s, String sep, boolean last) {
        int at = last ? s.lastIndexOf(sep) : s.indexOf(sep);
        List<Object> out = new ArrayList<>();
        if (at < 0) {
            if (last) {
                out.add("");
                out.add("");
                out.add(s);
            } else {
                out.add(s);
                out.add("");
                out.add("");
            }
            return out;
        }
        out.add(s.substring(0, at));
        out.add(sep);
        out.add(s.substring(at + sep.length()));
        return out;
    }
}
