package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.List;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstUnary;
import jinjava.javax.el.ELContext;

/**
 * Jinja2's operators with Python's semantics, in place of JUEL's (which coerce: {@code '1' == 1}
 * is true there, {@code 'a' + 1} is "a1", {@code -7 % 3} is -1, {@code and} gives a boolean).
 * {@code and}/{@code or} return an operand and short-circuit; {@code +} concatenates strings
 * and lists only with their own kind; {@code %} on a string formats; {@code ~} joins the
 * operands' str(), printing None as "None" and an undefined value as nothing.
 */
final class PyOperators {
    private PyOperators() {
    }

    /** An operator over the two operand values. */
    private abstract static class Values implements AstBinary.Operator {
        private final String symbol;

        Values(String symbol) {
            this.symbol = symbol;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            return apply(left.eval(bindings, context), right.eval(bindings, context));
        }

        abstract Object apply(Object a, Object b);

        @Override
        public String toString() {
            return symbol;
        }
    }

    /** A comparison, usable in a chain. */
    abstract static class Comparison extends Values {
        Comparison(String symbol) {
            super(symbol);
        }

        abstract boolean test(Object a, Object b);

        @Override
        Object apply(Object a, Object b) {
            return test(a, b);
        }
    }

    static final AstBinary.Operator AND = new AstBinary.Operator() {
        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = left.eval(bindings, context);
            return PyValues.truthy(a) ? right.eval(bindings, context) : a;
        }

        @Override
        public String toString() {
            return "and";
        }
    };

    static final AstBinary.Operator OR = new AstBinary.Operator() {
        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = left.eval(bindings, context);
            return PyValues.truthy(a) ? a : right.eval(bindings, context);
        }

        @Override
        public String toString() {
            return "or";
        }
    };

    static final AstBinary.Operator CONCAT = new AstBinary.Operator() {
        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            return text(left, bindings, context) + text(right, bindings, context);
        }

        private String text(AstNode node, Bindings bindings, ELContext context) {
            Object v = node.eval(bindings, context);
            if (v == null) {
                return Presence.of(node, bindings, context).present() ? "None" : "";
            }
            return PyRepr.str(v);
        }

        @Override
        public String toString() {
            return "~";
        }
    };

    static final AstBinary.Operator ADD = new Values("+") {
        @Override
        Object apply(Object a, Object b) {
            if (PyValues.isNumber(a) && PyValues.isNumber(b)) {
                return PyNumbers.add(a, b);
            }
            if (PyValues.isString(a) && PyValues.isString(b)) {
                return PyValues.string(a) + PyValues.string(b);
            }
            if (PyValues.isList(a) && PyValues.isList(b)) {
                List<Object> out = new ArrayList<>(PyValues.iterate(a));
                out.addAll(PyValues.iterate(b));
                return PyValues.unwrap(a) instanceof PyTuple ? new PyTuple(out) : out;
            }
            if (PyValues.isString(a) || PyValues.isList(a)) {
                String kind = PyValues.typeName(a);
                throw PyErrors.type("can only concatenate " + kind + " (not \"" + PyValues.typeName(b) + "\") to " + kind);
            }
            throw unsupported("+", a, b);
        }
    };

    static final AstBinary.Operator SUB = new Values("-") {
        @Override
        Object apply(Object a, Object b) {
            requireNumbers("-", a, b);
            return PyNumbers.sub(a, b);
        }
    };

    static final AstBinary.Operator MUL = new Values("*") {
        @Override
        Object apply(Object a, Object b) {
            if (PyValues.isNumber(a) && PyValues.isNumber(b)) {
                return PyNumbers.mul(a, b);
            }
            if (PyNumbers.isInt(b) && (PyValues.isString(a) || PyValues.isList(a))) {
                return repeat(a, (long) PyNumbers.toDouble(b));
            }
            if (PyNumbers.isInt(a) && (PyValues.isString(b) || PyValues.isList(b))) {
                return repeat(b, (long) PyNumbers.toDouble(a));
            }
            throw unsupported("*", a, b);
        }

        private Object repeat(Object seq, long times) {
            if (PyValues.isString(seq)) {
                return times <= 0 ? "" : PyValues.string(seq).repeat((int) times);
            }
            List<Object> items = PyValues.iterate(seq);
            List<Object> out = new ArrayList<>();
            for (long i = 0; i < times; i++) {
                out.addAll(items);
            }
            return out;
        }
    };

    static final AstBinary.Operator DIV = new Values("/") {
        @Override
        Object apply(Object a, Object b) {
            requireNumbers("/", a, b);
            return PyNumbers.trueDiv(a, b);
        }
    };

    static final AstBinary.Operator FLOOR_DIV = new Values("//") {
        @Override
        Object apply(Object a, Object b) {
            requireNumbers("//", a, b);
            return PyNumbers.floorDiv(a, b);
        }
    };

    static final AstBinary.Operator MOD = new Values("%") {
        @Override
        Object apply(Object a, Object b) {
            if (PyValues.isString(a)) {
                return PyFormat.percent(PyValues.string(a), PyValues.unwrap(b));
            }
            requireNumbers("%", a, b);
            return PyNumbers.mod(a, b);
        }
    };

    static final AstBinary.Operator POW = new Values("**") {
        @Override
        Object apply(Object a, Object b) {
            requireNumbers("** or pow()", a, b);
            return PyNumbers.pow(a, b);
        }
    };

    static final Comparison EQ = new Comparison("==") {
        @Override
        boolean test(Object a, Object b) {
            return PyValues.eq(a, b);
        }
    };

    static final Comparison NE = new Comparison("!=") {
        @Override
        boolean test(Object a, Object b) {
            return !PyValues.eq(a, b);
        }
    };

    static final Comparison LT = new Comparison("<") {
        @Override
        boolean test(Object a, Object b) {
            return PyValues.compare(a, b, "<") < 0;
        }
    };

    static final Comparison LE = new Comparison("<=") {
        @Override
        boolean test(Object a, Object b) {
            return PyValues.compare(a, b, "<=") <= 0;
        }
    };

    static final Comparison GT = new Comparison(">") {
        @Override
        boolean test(Object a, Object b) {
            return PyValues.compare(a, b, ">") > 0;
        }
    };

    static final Comparison GE = new Comparison(">=") {
        @Override
        boolean test(Object a, Object b) {
            return PyValues.compare(a, b, ">=") >= 0;
        }
    };

    static final Comparison IN = new Membership("in", false);
    static final Comparison NOT_IN = new Membership("not in", true);

    /** {@code in}: an undefined container holds nothing (Jinja2's Undefined iterates empty), None is an error. */
    private static final class Membership extends Comparison {
        private final boolean negated;

        Membership(String symbol, boolean negated) {
            super(symbol);
            this.negated = negated;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object item = left.eval(bindings, context);
            Object container = right.eval(bindings, context);
            if (container == null && !Presence.of(right, bindings, context).present()) {
                return negated;
            }
            return test(item, container);
        }

        @Override
        boolean test(Object a, Object b) {
            return PyValues.contains(b, a) != negated;
        }
    }

    static final AstUnary.Operator NOT = new AstUnary.Operator() {
        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode node) {
            return !PyValues.truthy(node.eval(bindings, context));
        }

        @Override
        public String toString() {
            return "not";
        }
    };

    static final AstUnary.Operator NEG = new AstUnary.Operator() {
        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode node) {
            Object v = node.eval(bindings, context);
            if (!PyValues.isNumber(v)) {
                throw PyErrors.type("bad operand type for unary -: '" + PyValues.typeName(v) + "'");
            }
            return PyNumbers.neg(v);
        }

        @Override
        public String toString() {
            return "-";
        }
    };

    static final AstUnary.Operator POS = new AstUnary.Operator() {
        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode node) {
            Object v = node.eval(bindings, context);
            if (!PyValues.isNumber(v)) {
                throw PyErrors.type("bad operand type for unary +: '" + PyValues.typeName(v) + "'");
            }
            return v instanceof Boolean ? PyNumbers.add(v, 0L) : v;
        }

        @Override
        public String toString() {
            return "+";
        }
    };

    /** Python's a + b on values. */
    static Object plus(Object a, Object b) {
        return ((Values) ADD).apply(a, b);
    }

    private static void requireNumbers(String op, Object a, Object b) {
        if (!PyValues.isNumber(a) || !PyValues.isNumber(b)) {
            throw unsupported(op, a, b);
        }
    }

    private static RuntimeException unsupported(String op, Object a, Object b) {
        if (a == null || b == null) {
            return PyErrors.undefined("unsupported operand for " + op + ": '" + PyValues.typeName(a) + "' and '"
                    + PyValues.typeName(b) + "'");
        }
        return PyErrors.type("unsupported operand type(s) for " + op + ": '" + PyValues.typeName(a) + "' and '"
                + PyValues.typeName(b) + "'");
    }

    /** {@code a < b < c}: each comparison on the values of its neighbours, stopping at the first false. */
    static final class Chain extends ExprNode {
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
}
