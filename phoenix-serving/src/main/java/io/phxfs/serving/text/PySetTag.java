package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.FlexibleTag;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.objects.Namespace;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.tree.parse.TagToken;
import java.util.List;

/**
 * Jinja2's set: {@code {% set x = expr %}}, {@code {% set a, b = expr %}} (unpacking),
 * {@code {% set ns.attr = expr %}} (a namespace's attribute) and the block form
 * {@code {% set x %}...{% endset %}} (with an optional filter, {@code {% set x | trim %}}).
 * Unlike jinjava's, a None value hides an outer variable of the same name ({@link Scopes}), and
 * {@code {% set x = a, b %}} assigns the tuple.
 */
final class PySetTag implements Tag, FlexibleTag {
    private static final long serialVersionUID = 1L;
    /** The block's text while its filter runs; a name templates do not use. */
    private static final String BLOCK = "__phx_set_block__";

    @Override
    public String getName() {
        return "set";
    }

    @Override
    public String getEndTagName() {
        return "endset";
    }

    @Override
    public boolean hasEndTag(TagToken tagToken) {
        return tagToken.getHelpers().indexOf('=') < 0;
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        String helpers = tagNode.getHelpers();
        int eq = helpers.indexOf('=');
        if (eq < 0) {
            block(tagNode, helpers, interpreter);
            return "";
        }
        List<String> targets = List.of(helpers.substring(0, eq).strip().split("\\s*,\\s*"));
        String expression = helpers.substring(eq + 1).strip();
        if (targets.stream().anyMatch(String::isEmpty) || expression.isEmpty()) {
            throw new TemplateAbort("TemplateSyntaxError: expected 'set <name> = <expression>' (line "
                    + tagNode.getLineNumber() + ")", false);
        }
        boolean tuple = PyForTag.topLevelComma(expression);
        Object value = interpreter.resolveELExpression(tuple ? "(" + expression + ")" : expression,
                tagNode.getLineNumber());
        if (targets.size() == 1) {
            boolean defined = value != null || tuple || Boolean.TRUE.equals(interpreter.resolveELExpression(
                    "(" + expression + ") is defined", tagNode.getLineNumber()));
            assign(targets.get(0), value, defined, interpreter);
            return "";
        }
        List<Object> values = PyValues.iterate(PyValues.unwrap(value));
        if (values.size() != targets.size()) {
            throw new TemplateAbort("ValueError: " + (values.size() > targets.size() ? "too many values to unpack"
                    : "not enough values to unpack") + " (expected " + targets.size() + ", got " + values.size() + ")",
                    false);
        }
        for (int i = 0; i < targets.size(); i++) {
            assign(targets.get(i), values.get(i), true, interpreter);
        }
        return "";
    }

    private static void block(TagNode tagNode, String helpers, JinjavaInterpreter interpreter) {
        int pipe = helpers.indexOf('|');
        String target = (pipe < 0 ? helpers : helpers.substring(0, pipe)).strip();
        StringBuilder text = new StringBuilder();
        for (Node child : tagNode.getChildren()) {
            text.append(child.render(interpreter).getValue());
        }
        Object value = text.toString();
        if (pipe >= 0) {
            try (var _ = interpreter.enterScope()) {
                interpreter.getContext().put(BLOCK, value);
                value = interpreter.resolveELExpression(BLOCK + helpers.substring(pipe), tagNode.getLineNumber());
            }
        }
        assign(target, value, true, interpreter);
    }

    private static void assign(String target, Object value, boolean defined, JinjavaInterpreter interpreter) {
        int dot = target.indexOf('.');
        if (dot < 0) {
            Scopes.set(interpreter, target, value, defined);
            return;
        }
        Object owner = PyValues.unwrap(interpreter.getContext().get(target.substring(0, dot)));
        if (!(owner instanceof Namespace namespace)) {
            throw new TemplateAbort("TemplateRuntimeError: cannot assign attribute on non-namespace object", false);
        }
        namespace.put(target.substring(dot + 1), value);
    }
}
