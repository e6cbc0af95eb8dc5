package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Jinja2's {@code {% macro name(a, b=default) %}}: the signature read as Jinja2 reads it (a
 * default may hold commas and brackets, {@code sep=', '} or {@code d={'a': 1, 'b': 2}}, where
 * jinjava's tag cuts at every comma), and a {@link PyMacroFunction} that binds arguments as
 * Jinja2's Macro does.
 */
final class PyMacroTag implements Tag {
    private static final long serialVersionUID = 1L;
    private static final Pattern HEAD = Pattern.compile("\\s*([A-Za-z_]\\w*)\\s*\\((.*)\\)\\s*", Pattern.DOTALL);
    private static final Pattern PARAMETER = Pattern.compile("\\s*([A-Za-z_]\\w*)\\s*(?:=(?!=)(.*))?", Pattern.DOTALL);

    /**
     * A parsed signature: the macro's name, its parameters in order and each one's default
     * expression (null for none).
     */
    record Signature(String name, List<String> parameters, List<String> defaults) {
        /**
         * @throws TemplateAbort with Jinja2's TemplateSyntaxError for a malformed signature
         */
        static Signature parse(String helpers, int line) {
            Matcher head = HEAD.matcher(helpers);
            if (!head.matches()) {
                throw syntax("expected 'macro name(arguments)', got '" + helpers.strip() + "'", line);
            }
            List<String> parameters = new ArrayList<>();
            List<String> defaults = new ArrayList<>();
            String list = head.group(2);
            if (!list.isBlank()) {
                for (String part : PyForTag.splitTopLevel(list, ',')) {
                    Matcher p = PARAMETER.matcher(part);
                    if (!p.matches() || p.group(2) != null && p.group(2).isBlank()) {
                        throw syntax("invalid macro argument '" + part.strip() + "'", line);
                    }
                    if (p.group(2) == null && defaults.stream().anyMatch(d -> d != null)) {
                        throw syntax("non-default argument follows default argument", line);
                    }
                    parameters.add(p.group(1));
                    defaults.add(p.group(2) == null ? null : p.group(2).strip());
                }
            }
            return new Signature(head.group(1), List.copyOf(parameters), java.util.Collections.unmodifiableList(defaults));
        }

        /** The default expressions, for the load-time syntax check. */
        List<String> defaultExpressions() {
            return defaults.stream().filter(d -> d != null).toList();
        }
    }

    @Override
    public String getName() {
        return "macro";
    }

    @Override
    public String getEndTagName() {
        return "endmacro";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        Signature signature = Signature.parse(tagNode.getHelpers(), tagNode.getLineNumber());
        StringBuilder body = new StringBuilder();
        for (Node child : tagNode.getChildren()) {
            body.append(child.reconstructImage());
        }
        interpreter.getContext().addGlobalMacro(new PyMacroFunction(tagNode.getChildren(), signature,
                body.toString(), interpreter.getContext(), tagNode.getLineNumber(), tagNode.getStartPosition()));
        return "";
    }

    private static TemplateAbort syntax(String message, int line) {
        return new TemplateAbort("TemplateSyntaxError: " + message + " (line " + line + ")", false);
    }
}
