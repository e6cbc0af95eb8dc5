package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import java.util.List;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;

/**
 * Filter and test calls as {@link PyParser} builds them: looked up by name when they run (an
 * unknown one fails, as in Jinja2, instead of evaluating to nothing), with Python-bound
 * arguments, and the presence tests (defined, undefined, none), which look at the expression
 * itself to tell a missing key from a None value.
 */
final class FilterNodes {
    private FilterNodes() {
    }

    /** {@code value|name(args)}. */
    static final class Filter extends ExprNode {
        private final AstNode input;
        private final String name;
        private final List<AstNode> args;

        Filter(AstNode input, String name, List<AstNode> args) {
            this.input = input;
            this.name = name;
            this.args = args;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            return PyFilter.value(result(bindings, context));
        }

        /** The filter's result, {@link PyFilter#UNDEFINED} where Jinja2's is Undefined. */
        Object result(Bindings bindings, ELContext context) {
            JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
            com.hubspot.jinjava.lib.filter.Filter filter = interpreter.getContext().getFilter(name);
            if (filter == null) {
                throw PyErrors.fail("TemplateAssertionError: No filter named '" + name + "'.");
            }
            Object value = input.eval(bindings, context);
            Args a = ExprNode.arguments(args, bindings, context);
            if (filter instanceof PyFilter py) {
                return py.apply(value, a, interpreter, input, bindings, context);
            }
            return filter.filter(value, interpreter, a.positional().toArray(), a.keywords());
        }

        @Override
        public String toString() {
            return input + "|" + name;
        }
    }

    /** {@code value is [not] name(args)} for every test but the presence ones. */
    static final class Test extends ExprNode {
        private final AstNode input;
        private final String name;
        private final boolean negated;
        private final List<AstNode> args;

        Test(AstNode input, String name, boolean negated, List<AstNode> args) {
            this.input = input;
            this.name = name;
            this.negated = negated;
            this.args = args;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
            ExpTest test = interpreter.getContext().getExpTest(name);
            if (test == null) {
                throw PyErrors.fail("TemplateAssertionError: No test named '" + name + "'.");
            }
            Object value = input.eval(bindings, context);
            Object[] a = ExprNode.arguments(args, bindings, context).positional().toArray();
            return test.evaluate(value, interpreter, a) != negated;
        }

        @Override
        public String toString() {
            return input + " is " + (negated ? "not " : "") + name;
        }
    }

    /** defined, undefined and none, which must tell an absent key from a None value. */
    static final class PresenceTest extends ExprNode {
        private final AstNode input;
        private final String name;
        private final boolean negated;

        PresenceTest(AstNode input, String name, boolean negated) {
            this.input = input;
            this.name = name;
            this.negated = negated;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Presence p = Presence.of(input, bindings, context);
            boolean result = switch (name) {
                case "defined" -> p.present();
                case "undefined" -> !p.present();
                default -> p.present() && p.value() == null;
            };
            return result != negated;
        }
    }

    static AstNode test(AstNode input, String name, boolean negated, List<AstNode> args) {
        if (args.isEmpty() && (name.equals("defined") || name.equals("undefined") || name.equals("none"))) {
            return new PresenceTest(input, name, negated);
        }
        return new Test(input, name, negated, args);
    }
}
