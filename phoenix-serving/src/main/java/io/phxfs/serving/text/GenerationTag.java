package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;

/**
 * transformers' {@code {% generation %}...{% endgeneration %}}, which marks the assistant's
 * tokens for training masks and renders its body unchanged.
 */
final class GenerationTag implements Tag {
    private static final long serialVersionUID = 1L;

    @Override
    public String getName() {
        return "generation";
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        StringBuilder out = new StringBuilder();
        for (Node child : tagNode.getChildren()) {
            out.append(child.render(interpreter).getValue());
        }
        return out.toString();
    }
}
