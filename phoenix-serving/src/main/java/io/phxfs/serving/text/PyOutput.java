package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.expression.ExpressionStrategy;
import com.hubspot.jinjava.tree.output.RenderedOutputNode;
import com.hubspot.jinjava.tree.parse.ExpressionToken;

/**
 * How {@code {{ expression }}} prints: Python's str() of the value, nothing for undefined and
 * "None" for None (a null is asked again, with {@link Presence}, which of the two it is). jinjava's default would trim the
 * text, strip quotes around it, print booleans in lower case and interpret template syntax
 * found in the value (message text that contains "{{" must stay text).
 */
final class PyOutput implements ExpressionStrategy {
    private static final long serialVersionUID = 1L;

    @Override
    public RenderedOutputNode interpretOutput(ExpressionToken master, JinjavaInterpreter interpreter) {
        String expression = master.getExpr();
        Object value = interpreter.resolveELExpression(expression, master.getLineNumber());
        if (value == null) {
            boolean none = Boolean.TRUE.equals(interpreter.resolveELExpression("(" + expression + ") is none",
                    master.getLineNumber()));
            return new RenderedOutputNode(none ? "None" : "");
        }
        return new RenderedOutputNode(PyRepr.str(value));
    }
}
