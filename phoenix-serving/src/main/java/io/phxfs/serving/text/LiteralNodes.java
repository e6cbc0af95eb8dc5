package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.AstTuple;
import java.util.Arrays;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.javax.el.ELContext;

/** Literals Jinja2 has and JUEL lacks: tuples, and the undefined value of an inline if without else. */
final class LiteralNodes {
    private LiteralNodes() {
    }

    /** A tuple literal. */
    static final class Tuple extends AstTuple {
        Tuple(AstParameters parameters) {
            super(parameters);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            return new PyTuple(Arrays.asList(elements.eval(bindings, context)));
        }
    }

    /** The missing else of an inline if: undefined. */
    static final class Undefined extends ExprNode {
        @Override
        public Object eval(Bindings bindings, ELContext context) {
            return null;
        }
    }
}
