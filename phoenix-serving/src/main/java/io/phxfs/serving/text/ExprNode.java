package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.NamedParameter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstRightValue;
import jinjava.javax.el.ELContext;

/**
 * The plumbing of the expression nodes {@link PyParser} adds: no children visible to JUEL (they
 * evaluate their own), and the Python binding of call arguments.
 */
abstract class ExprNode extends AstRightValue {

    @Override
    public void appendStructure(StringBuilder builder, Bindings bindings) {
        builder.append(this);
    }

    @Override
    public int getCardinality() {
        return 0;
    }

    @Override
    public AstNode getChild(int i) {
        return null;
    }

    /** Evaluated call arguments; {@code name=value} ones are keywords. */
    static Args arguments(List<AstNode> nodes, Bindings bindings, ELContext context) {
        if (nodes.isEmpty()) {
            return Args.NONE;
        }
        List<Object> positional = new ArrayList<>();
        Map<String, Object> keywords = new LinkedHashMap<>();
        for (AstNode n : nodes) {
            Object v = n.eval(bindings, context);
            if (v instanceof NamedParameter p) {
                keywords.put(p.getName(), p.getValue());
            } else {
                positional.add(v);
            }
        }
        return new Args(positional, keywords);
    }
}
