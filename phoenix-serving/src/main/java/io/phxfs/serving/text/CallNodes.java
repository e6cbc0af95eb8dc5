package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.AstTuple;
import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.de.odysseus.el.tree.impl.ast.AstRightValue;
import jinjava.javax.el.ELContext;

/**
 * The expression nodes {@link PyParser} adds to jinjava's: filter and test calls (looked up when
 * they run, so that an unknown one fails as in Jinja2 instead of evaluating to nothing), the
 * presence tests (defined, undefined, none), slices with a step, chained comparisons, tuples,
 * and attribute and item access that fails on an undefined base as Jinja2 does.
 */
final class CallNodes {
    private CallNodes() {
    }

    /** {@code value|name(args)}. */
    static final class Filter extends Node {
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
            JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
            com.hubspot.jinjava.lib.filter.Filter filter = interpreter.getContext().getFilter(name);
            if (filter == null) {
                throw PyErrors.fail("TemplateAssertionError: No filter named '" + name + "'.");
            }
            Object value = input.eval(bindings, context);
            Args a = arguments(args, bindings, context);
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
    static final class Test extends Node {
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
            Object[] a = arguments(args, bindings, context).positional().toArray();
            return test.evaluate(value, interpreter, a) != negated;
        }

        @Override
        public String toString() {
            return input + " is " + (negated ? "not " : "") + name;
        }
    }

    /** defined, undefined and none, which must tell an absent key from a None value. */
    static final class PresenceTest extends Node {
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

    /** {@code base[start:stop:step]} with Python's slice semantics on strings (code points) and lists. */
    static final class Slice extends Node {
        private final AstNode base;
        private final AstNode start;
        private final AstNode stop;
        private final AstNode step;

        Slice(AstNode base, AstNode start, AstNode stop, AstNode step) {
            this.base = base;
            this.start = start;
            this.stop = stop;
            this.step = step;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object v = base.eval(bindings, context);
            Long a = index(start, bindings, context);
            Long b = index(stop, bindings, context);
            Long c = index(step, bindings, context);
            if (v == null) {
                throw PyErrors.type("'NoneType' object is not subscriptable");
            }
            return PySlices.slice(v, a, b, c);
        }

        private static Long index(AstNode node, Bindings bindings, ELContext context) {
            if (node == null) {
                return null;
            }
            Object v = node.eval(bindings, context);
            if (v == null) {
                return null;
            }
            if (!PyNumbers.isInt(v)) {
                throw PyErrors.type("slice indices must be integers or None");
            }
            return (long) PyNumbers.toDouble(v);
        }
    }

    /** {@code a < b < c}: each comparison on the values of its neighbours, stopping at the first false. */
    static final class Chain extends Node {
        private final List<AstNode> operands;
        private final List<AstBinary.Operator> operators;

        Chain(List<AstNode> operands, List<AstBinary.Operator> operators) {
            this.operands = operands;
            this.operators = operators;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object left = operands.get(0).eval(bindings, context);
            for (int i = 0; i < operators.size(); i++) {
                Object right = operands.get(i + 1).eval(bindings, context);
                if (!((PyOperators.Comparison) operators.get(i)).test(left, right)) {
                    return false;
                }
                left = right;
            }
            return true;
        }
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

    /** {@code base.name}: an undefined base fails, a None base gives undefined, as in Jinja2. */
    static final class Dot extends AstDot {
        Dot(AstNode base, String name, boolean lvalue) {
            super(base, name, lvalue);
        }

        AstNode base() {
            return prefix;
        }

        String name() {
            return property;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            if (base == null) {
                Presence.requireDefined(prefix, bindings, context);
                return null;
            }
            Object b = PyValues.unwrap(base);
            if (b instanceof Map && !(b instanceof LoopContext) && !(b instanceof com.hubspot.jinjava.objects.Namespace)
                    && BoundMethod.DICT_METHODS.contains(property)) {
                // Jinja2 looks up attributes before items: d.items is the method even when d has a key "items"
                return new BoundMethod(property, "dict");
            }
            return context.getELResolver().getValue(context, base, property);
        }
    }

    /** {@code base[key]}, failing like {@link Dot} on an undefined base. */
    static final class Bracket extends AstBracket {
        Bracket(AstNode base, AstNode key, boolean lvalue, boolean strict) {
            super(base, key, lvalue, strict);
        }

        AstNode base() {
            return prefix;
        }

        Object key(Bindings bindings, ELContext context) {
            return property.eval(bindings, context);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            if (base == null) {
                Presence.requireDefined(prefix, bindings, context);
                return null;
            }
            Object key = property.eval(bindings, context);
            if (key == null) {
                return null;
            }
            return context.getELResolver().getValue(context, base, key);
        }
    }

    /**
     * A call's arguments where None becomes the value {@link Scopes} stores: a macro binds its
     * arguments in its scope, where a null would show an outer variable of the same name. JUEL
     * evaluates a call's arguments one by one, so each is wrapped.
     */
    static final class NoneSafeParameters extends AstParameters {
        NoneSafeParameters(AstParameters parameters) {
            super(wrapped(parameters));
        }

        private static List<AstNode> wrapped(AstParameters p) {
            List<AstNode> out = new ArrayList<>();
            for (int i = 0; i < p.getCardinality(); i++) {
                out.add(new NoneSafe(p.getChild(i)));
            }
            return out;
        }
    }

    /** One argument of {@link NoneSafeParameters}. */
    static final class NoneSafe extends Node {
        private final AstNode argument;

        NoneSafe(AstNode argument) {
            this.argument = argument;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object value = argument.eval(bindings, context);
            if (value == null) {
                return Scopes.stored(null, Presence.of(argument, bindings, context).present());
            }
            if (value instanceof NamedParameter p && p.getValue() == null) {
                AstNode inner = argument instanceof com.hubspot.jinjava.el.ext.AstNamedParameter named
                        ? named.getChild(1) : null;
                boolean present = inner == null || Presence.of(inner, bindings, context).present();
                return new NamedParameter(p.getName(), Scopes.stored(null, present));
            }
            return value;
        }

        @Override
        public String toString() {
            return argument.toString();
        }
    }

    /** The missing else of an inline if: undefined. */
    static final class Undefined extends Node {
        @Override
        public Object eval(Bindings bindings, ELContext context) {
            return null;
        }
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

    /** Shared plumbing of the nodes above: no children visible to JUEL, no structural text. */
    abstract static class Node extends AstRightValue {
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
    }
}
