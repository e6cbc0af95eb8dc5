package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;

/** Jinja2's {@code {% filter upper %}...{% endfilter %}}: the body's text through a filter chain. */
final class FilterBlockTag implements Tag {
    private static final long serialVersionUID = 1L;
    /** The body's text while the filters run; a name templates do not use. */
    private static final String BODY = "__phx_filter_body__";

    @Override
    public String getName() {
        return "filter";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        StringBuilder text = new StringBuilder();
        for (Node child : tagNode.getChildren()) {
            text.append(child.render(interpreter).getValue());
        }
        try (var _ = interpreter.enterScope()) {
            interpreter.getContext().put(BODY, text.toString());
            return PyRepr.str(interpreter.resolveELExpression(BODY + "|" + tagNode.getHelpers().strip(),
                    tagNode.getLineNumber()));
        }
    }
}
