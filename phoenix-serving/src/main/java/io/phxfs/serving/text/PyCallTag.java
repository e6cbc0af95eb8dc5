package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.fn.MacroFunction;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.TagNode;
import java.util.LinkedHashMap;

/**
 * Jinja2's {@code {% call(args) macro(...) %}body{% endcall %}}: calls the macro with the body
 * as {@code caller}, which (unlike jinjava's call tag) may take arguments.
 */
final class PyCallTag implements Tag {
    private static final long serialVersionUID = 1L;

    @Override
    public String getName() {
        return "call";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        String helpers = tagNode.getHelpers().strip();
        LinkedHashMap<String, Object> parameters = new LinkedHashMap<>();
        if (helpers.startsWith("(")) {
            int close = helpers.indexOf(')');
            if (close < 0) {
                throw new TemplateAbort("TemplateSyntaxError: unclosed caller arguments (line "
                        + tagNode.getLineNumber() + ")", false);
            }
            for (String name : helpers.substring(1, close).split(",")) {
                if (!name.isBlank()) {
                    parameters.put(name.strip(), null);
                }
            }
            helpers = helpers.substring(close + 1).strip();
        }
        try (var _ = interpreter.enterNonStackingScope()) {
            MacroFunction caller = new MacroFunction(tagNode.getChildren(), "caller", parameters, true,
                    interpreter.getContext(), interpreter.getLineNumber(), interpreter.getPosition());
            interpreter.getContext().addGlobalMacro(caller);
            return PyRepr.str(interpreter.resolveELExpression(helpers, tagNode.getLineNumber()));
        }
    }
}
