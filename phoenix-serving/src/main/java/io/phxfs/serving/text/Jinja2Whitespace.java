package io.phxfs.serving.text;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Jinja2's trim_blocks and lstrip_blocks, applied to the template source before jinjava parses
 * it. jinjava's own versions differ where chat templates notice: its lstrip removes the spaces
 * before any block tag, also mid-line ({@code a, {% endif %}} loses the space), and it knows no
 * {@code {%+ %}}. Jinja2 (its lexer, which this follows) strips spaces and tabs before a block
 * or comment tag only when they start a line, never before {@code {%+} or {@code {%-} (the
 * latter strips everything itself), and drops the one newline after {@code %}} or {@code #}}
 * unless it is {@code +%}}; a {@code {% raw %}} block's content is left alone. Comments are
 * resolved here, with their own whitespace control ({@code {#- -#}}), because jinjava mangles
 * the text around a trimming comment. Dropped newlines and comments become empty expressions
 * spanning as many lines, so that jinjava's line numbers stay the source's.
 */
final class Jinja2Whitespace {
    private static final Pattern RAW_BEGIN = Pattern.compile("\\{%[-+]?\\s*raw\\s*[-+]?%}");
    private static final Pattern RAW_END = Pattern.compile("\\{%[-+]?\\s*endraw\\s*[-+]?%}");

    private Jinja2Whitespace() {
    }

    static String apply(String source) {
        StringBuilder out = new StringBuilder(source.length());
        boolean lineStarting = true;
        int i = 0;
        while (i < source.length()) {
            int start = nextTag(source, i);
            if (start < 0) {
                out.append(source, i, source.length());
                break;
            }
            char kind = source.charAt(start + 1);
            char sign = start + 2 < source.length() ? source.charAt(start + 2) : 0;
            String text = source.substring(i, start);
            if (kind != '{' && sign != '-' && sign != '+') {
                text = lstrip(text, lineStarting);
            }
            out.append(text);
            int end = tagEnd(source, start, kind);
            if (end < 0) {
                out.append(source, start, source.length());
                break;
            }
            String tag = source.substring(start, end);
            if (kind == '#') {
                // comments never reach jinjava, whose whitespace control misbehaves around them
                int newlines = count(tag);
                if (sign == '-') {
                    int keep = out.length();
                    while (keep > 0 && Character.isWhitespace(out.charAt(keep - 1))) {
                        keep--;
                    }
                    newlines += count(out.substring(keep));
                    out.setLength(keep);
                }
                i = end;
                lineStarting = false;
                if (tag.endsWith("-#}")) {
                    int skip = i;
                    while (skip < source.length() && Character.isWhitespace(source.charAt(skip))) {
                        skip++;
                    }
                    newlines += count(source.substring(i, skip));
                    lineStarting = skip > i && source.charAt(skip - 1) == '\n';
                    i = skip;
                } else if (!tag.endsWith("+#}") && i < source.length() && source.charAt(i) == '\n') {
                    newlines++;
                    i++;
                    lineStarting = true;
                }
                out.append(placeholder(newlines, true));
                continue;
            }
            if (kind == '%' && sign == '+') {
                tag = "{%" + tag.substring(3);
            }
            String trailing = "";
            if (kind == '%' && RAW_BEGIN.matcher(tag).matches()) {
                Matcher endRaw = RAW_END.matcher(source);
                if (endRaw.find(end)) {
                    // jinjava knows raw tags only without "-": their whitespace control is done here
                    int dropped = 0;
                    if (sign == '-') {
                        int keep = out.length();
                        while (keep > 0 && Character.isWhitespace(out.charAt(keep - 1))) {
                            keep--;
                        }
                        dropped += count(out.substring(keep));
                        out.setLength(keep);
                    }
                    String content = source.substring(end, endRaw.start());
                    String endTag = endRaw.group();
                    char endSign = endTag.charAt(2);
                    if (tag.endsWith("-%}")) {
                        String stripped = content.stripLeading();
                        dropped += count(content.substring(0, content.length() - stripped.length()));
                        content = stripped;
                    }
                    out.append(placeholder(dropped, false)).append("{% raw %}");
                    dropped = 0;
                    if (endSign == '-') {
                        String stripped = content.stripTrailing();
                        dropped += count(content.substring(stripped.length()));
                        content = stripped;
                    } else if (endSign != '+') {
                        content = lstrip(content, false);
                    }
                    out.append(content);
                    end = endRaw.end();
                    if (endTag.endsWith("-%}")) {
                        int skip = end;
                        while (skip < source.length() && Character.isWhitespace(source.charAt(skip))) {
                            skip++;
                        }
                        dropped += count(source.substring(end, skip));
                        out.append("{% endraw %}").append(placeholder(dropped, false));
                        lineStarting = skip > end && source.charAt(skip - 1) == '\n';
                        i = skip;
                        continue;
                    }
                    tag = "{% endraw" + (endTag.endsWith("+%}") ? " +%}" : " %}");
                    trailing = placeholder(dropped, false);
                }
            }
            tag = spaceBraces(tag, kind);
            boolean keepNewline = kind == '%' && tag.endsWith("+%}");
            boolean selfTrimming = tag.endsWith("-" + closing(kind));
            if (keepNewline) {
                tag = tag.substring(0, tag.length() - 3) + "%}";
            }
            out.append(tag).append(trailing);
            i = end;
            lineStarting = false;
            if (kind == '%' && !keepNewline && !selfTrimming && i < source.length() && source.charAt(i) == '\n') {
                out.append(placeholder(1, false));
                i++;
                lineStarting = true;
            }
        }
        return out.toString();
    }

    /**
     * An empty expression spanning {@code newlines} lines, in place of what was dropped: it
     * prints nothing, keeps jinjava's line numbers those of the source, and, for a comment,
     * separates the text around it as the comment did in Jinja2 (whose {@code {%- } strips only
     * the text right before it, not text before a comment before it).
     */
    private static String placeholder(int newlines, boolean comment) {
        return newlines == 0 && !comment ? "" : "{{ ''" + "\n".repeat(newlines) + " }}";
    }

    private static int count(String s) {
        int n = 0;
        for (int k = 0; k < s.length(); k++) {
            if (s.charAt(k) == '\n') {
                n++;
            }
        }
        return n;
    }

    /** Drops the whitespace between the last line start and the tag when that is all the line holds. */
    private static String lstrip(String text, boolean lineStarting) {
        int lineStart = text.lastIndexOf('\n') + 1;
        if (lineStart == 0 && !lineStarting || lineStart == text.length()) {
            return text;
        }
        for (int k = lineStart; k < text.length(); k++) {
            if (!Character.isWhitespace(text.charAt(k))) {
                return text;
            }
        }
        return text.substring(0, lineStart);
    }

    private static int nextTag(String s, int from) {
        for (int k = from; k + 1 < s.length(); k++) {
            if (s.charAt(k) == '{') {
                char c = s.charAt(k + 1);
                if (c == '{' || c == '%' || c == '#') {
                    return k;
                }
            }
        }
        return -1;
    }

    private static String closing(char kind) {
        return kind == '{' ? "}}" : kind + "}";
    }

    /**
     * The index after the tag that starts at {@code start}, skipping quoted strings and, as
     * Jinja2's lexer does, closing braces of dict literals; -1 if unclosed.
     */
    private static int tagEnd(String s, int start, char kind) {
        String close = closing(kind);
        char quote = 0;
        int depth = 0;
        for (int k = start + 2; k < s.length(); k++) {
            char c = s.charAt(k);
            if (kind != '#') {
                if (quote != 0) {
                    if (c == '\\') {
                        k++;
                    } else if (c == quote) {
                        quote = 0;
                    }
                    continue;
                }
                if (c == '\'' || c == '"') {
                    quote = c;
                    continue;
                }
                if (c == '{') {
                    depth++;
                    continue;
                }
                if (c == '}' && depth > 0) {
                    depth--;
                    continue;
                }
            }
            if (s.startsWith(close, k)) {
                return k + close.length();
            }
        }
        return -1;
    }

    /**
     * {@code }}} inside an expression (nested dict literals) spaced apart: jinjava's scanner
     * would end the tag there.
     */
    private static String spaceBraces(String tag, char kind) {
        String inner = tag.substring(2, tag.length() - 2);
        if (!inner.contains("}}")) {
            return tag;
        }
        StringBuilder out = new StringBuilder(tag.length() + 4).append(tag, 0, 2);
        char quote = 0;
        for (int k = 0; k < inner.length(); k++) {
            char c = inner.charAt(k);
            out.append(c);
            if (quote != 0) {
                if (c == '\\' && k + 1 < inner.length()) {
                    out.append(inner.charAt(++k));
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '}' && k + 1 < inner.length() && inner.charAt(k + 1) == '}') {
                out.append(' ');
            }
        }
        return out.append(tag, tag.length() - 2, tag.length()).toString();
    }
}
