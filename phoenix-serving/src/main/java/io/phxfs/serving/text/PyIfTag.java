package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.IfTag;
import com.hubspot.jinjava.tree.TagNode;

/** jinjava's if (and elif) with Python's truthiness: jinjava takes the string "false" for false. */
final class PyIfTag extends IfTag {
    private static final long serialVersionUID = 1L;

    @Override
    public boolean isPositiveIfElseNode(TagNode tagNode, JinjavaInterpreter interpreter) {
        return PyValues.truthy(interpreter.resolveELExpression(tagNode.getHelpers(), tagNode.getLineNumber(),
                tagNode.getStartPosition()));
    }
}
