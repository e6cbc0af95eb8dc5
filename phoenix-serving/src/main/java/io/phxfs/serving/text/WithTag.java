package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import java.util.ArrayList;
import java.util.List;

/** Jinja2's {@code {% with a = 1, b = x %}...{% endwith %}}: a scope with its own variables. */
final class WithTag implements Tag {
    private static final long serialVersionUID = 1L;

    @Override
    public String getName() {
        return "with";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        List<String[]> assignments = new ArrayList<>();
        for (String part : PyForTag.splitTopLevel(tagNode.getHelpers(), ',')) {
            int eq = part.indexOf('=');
            if (part.isBlank()) {
                continue;
            }
            if (eq < 0) {
                throw new TemplateAbort("TemplateSyntaxError: expected 'with <name> = <expression>, ...' (line "
                        + tagNode.getLineNumber() + ")", false);
            }
            assignments.add(new String[] {part.substring(0, eq).strip(), part.substring(eq + 1).strip()});
        }
        // the values are computed outside the new scope, as Jinja2 does
        List<Object> values = new ArrayList<>();
        for (String[] a : assignments) {
            values.add(interpreter.resolveELExpression(a[1], tagNode.getLineNumber()));
        }
        StringBuilder out = new StringBuilder();
        try (var _ = interpreter.enterScope()) {
            for (int i = 0; i < assignments.size(); i++) {
                Scopes.set(interpreter, assignments.get(i)[0], values.get(i));
            }
            for (Node child : tagNode.getChildren()) {
                out.append(child.render(interpreter).getValue());
            }
        }
        return out.toString();
    }
}
