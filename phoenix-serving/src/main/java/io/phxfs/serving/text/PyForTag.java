package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter.InterpreterScopeClosable;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Jinja2's for loop, which jinjava's lacks in parts templates use: the {@code if} filter
 * ({@code for m in messages if m.role != 'system'}, counted by loop.index), the {@code else}
 * block, previtem/nextitem, a fresh scope per iteration (a set inside the body starts from the
 * outer value each time), unpacking of pairs, and iteration over a dict's keys or a string's
 * characters.
 */
final class PyForTag implements Tag {
    private static final long serialVersionUID = 1L;
    private static final Pattern TARGETS = Pattern.compile("^\\s*\\(?\\s*([A-Za-z_]\\w*(?:\\s*,\\s*[A-Za-z_]\\w*)*)\\s*,?\\s*\\)?\\s+in\\s+");

    @Override
    public String getName() {
        return "for";
    }

    @Override
    public String getEndTagName() {
        return "endfor";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        Header header = Header.parse(tagNode.getHelpers(), tagNode.getLineNumber());
        List<String> targets = header.targets();
        String iterable = header.iterable();
        String filter = header.filter();
        Object collection = interpreter.resolveELExpression(iterable, tagNode.getLineNumber());
        if (collection == null && Boolean.TRUE.equals(interpreter.resolveELExpression("(" + iterable + ") is none",
                tagNode.getLineNumber()))) {
            // an undefined value loops zero times, None is an error
            throw new TemplateAbort("TypeError: 'NoneType' object is not iterable", false);
        }
        List<Object> items = PyValues.iterate(PyValues.unwrap(collection));
        if (filter != null) {
            items = filtered(items, targets, filter, tagNode, interpreter);
        }
        List<Node> body = new ArrayList<>();
        List<Node> otherwise = new ArrayList<>();
        boolean inElse = false;
        for (Node child : tagNode.getChildren()) {
            if (!inElse && child instanceof TagNode t && t.getName().equals("else")) {
                inElse = true;
            } else {
                (inElse ? otherwise : body).add(child);
            }
        }
        StringBuilder out = new StringBuilder();
        if (items.isEmpty()) {
            render(otherwise, interpreter, null, out);
            return out.toString();
        }
        LoopContext loop = new LoopContext(items);
        for (int i = 0; i < items.size() && !loop.broken(); i++) {
            loop.moveTo(i);
            try (InterpreterScopeClosable _ = interpreter.enterScope()) {
                bind(targets, items.get(i), interpreter);
                interpreter.getContext().put("loop", loop);
                render(body, interpreter, loop, out);
            }
        }
        return out.toString();
    }

    /**
     * The parts of {@code for <targets> in <iterable> [if <filter>]}.
     *
     * @param targets the loop variables
     * @param iterable the expression looped over
     * @param filter the condition items must meet, or null
     */
    record Header(List<String> targets, String iterable, String filter) {
        static Header parse(String helpers, int line) {
            Matcher m = TARGETS.matcher(helpers);
            if (!m.find()) {
                throw new TemplateAbort("TemplateSyntaxError: expected 'for <names> in <expression>', got '"
                        + helpers.strip() + "' (line " + line + ")", false);
            }
            String rest = helpers.substring(m.end()).strip();
            if (rest.endsWith(" recursive") || rest.equals("recursive")) {
                throw new TemplateAbort("recursive for loops are not supported (line " + line + ")", false);
            }
            int condition = topLevelIf(rest);
            String iterable = condition < 0 ? rest : rest.substring(0, condition).strip();
            if (iterable.isEmpty()) {
                throw new TemplateAbort("TemplateSyntaxError: 'for' needs something to loop over (line " + line + ")", false);
            }
            return new Header(List.of(m.group(1).split("\\s*,\\s*")), iterable,
                    condition < 0 ? null : rest.substring(condition + 2).strip());
        }
    }

    private static void render(List<Node> nodes, JinjavaInterpreter interpreter, LoopContext loop, StringBuilder out) {
        for (Node node : nodes) {
            out.append(node.render(interpreter).getValue());
            if (loop != null && loop.skipRest()) {
                return;
            }
        }
    }

    private static List<Object> filtered(List<Object> items, List<String> targets, String filter, TagNode tagNode,
            JinjavaInterpreter interpreter) {
        List<Object> kept = new ArrayList<>();
        for (Object item : items) {
            try (InterpreterScopeClosable _ = interpreter.enterScope()) {
                bind(targets, item, interpreter);
                if (PyValues.truthy(interpreter.resolveELExpression(filter, tagNode.getLineNumber()))) {
                    kept.add(item);
                }
            }
        }
        return kept;
    }

    private static void bind(List<String> targets, Object item, JinjavaInterpreter interpreter) {
        if (targets.size() == 1) {
            Scopes.set(interpreter, targets.get(0), item);
            return;
        }
        Object unwrapped = PyValues.unwrap(item);
        List<Object> values;
        if (unwrapped instanceof Map.Entry<?, ?> e) {
            values = java.util.Arrays.asList(e.getKey(), e.getValue());
        } else {
            values = PyValues.iterate(unwrapped);
        }
        if (values.size() != targets.size()) {
            throw new TemplateAbort("ValueError: " + (values.size() > targets.size() ? "too many values to unpack"
                    : "not enough values to unpack") + " (expected " + targets.size() + ", got " + values.size() + ")",
                    false);
        }
        for (int i = 0; i < targets.size(); i++) {
            Scopes.set(interpreter, targets.get(i), values.get(i));
        }
    }

    /** {@code s} cut at {@code separator} where it is outside strings and brackets. */
    static List<String> splitTopLevel(String s, char separator) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        char quote = 0;
        int start = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth--;
            } else if (c == separator && depth == 0) {
                parts.add(s.substring(start, i));
                start = i + 1;
            }
        }
        parts.add(s.substring(start));
        return parts;
    }

    /** Whether {@code s} has a comma outside strings and brackets (a tuple without parentheses). */
    static boolean topLevelComma(String s) {
        int depth = 0;
        char quote = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth--;
            } else if (c == ',' && depth == 0) {
                return true;
            }
        }
        return false;
    }

    /** Where a top-level {@code if} keyword starts (outside strings and brackets), or -1. */
    static int topLevelIf(String s) {
        int depth = 0;
        char quote = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth--;
            } else if (depth == 0 && c == 'i' && s.startsWith("if", i) && (i == 0 || !isWordChar(s.charAt(i - 1)))
                    && (i + 2 == s.length() || !isWordChar(s.charAt(i + 2)))) {
                return i;
            }
        }
        return -1;
    }

    private static boolean isWordChar(char c) {
        return Character.isLetterOrDigit(c) || c == '_';
    }
}
