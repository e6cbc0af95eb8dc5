package io.phxfs.serving.text;

import java.util.Map;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;

/**
 * Attribute, item and slice access with Jinja2's rules: a lookup on an undefined value fails,
 * one on None gives undefined, a dict's method names win over its keys for dot access, and
 * slices take a step.
 */
final class AccessNodes {
    private AccessNodes() {
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

    /** {@code base[start:stop:step]} with Python's slice semantics on strings (code points) and lists. */
    static final class Slice extends ExprNode {
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
}
