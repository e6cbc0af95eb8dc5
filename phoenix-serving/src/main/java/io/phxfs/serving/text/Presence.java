package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.util.ScopeMap;
import java.util.List;
import java.util.Map;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstChoice;
import jinjava.de.odysseus.el.tree.impl.ast.AstIdentifier;
import jinjava.de.odysseus.el.tree.impl.ast.AstNested;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;

/**
 * Whether an expression is defined, in Jinja2's sense. jinjava has one null for "no such
 * variable or key" and "the value None"; Jinja2 tells them apart ({@code tools=None} is defined
 * but none, a message without {@code tool_calls} has it undefined), and templates test for both.
 * A variable is defined when some scope holds the name (or it names a global function); an
 * attribute or item when the dict has the key or the list the index; any other expression is a
 * value and so defined.
 *
 * @param present whether it is defined
 * @param value its value when it is (null for None)
 */
record Presence(boolean present, Object value) {
    private static final Presence ABSENT = new Presence(false, null);

    static Presence of(AstNode node, Bindings bindings, ELContext context) {
        if (node instanceof LiteralNodes.Undefined) {
            return ABSENT;
        }
        if (node instanceof AstNested nested) {
            return of(nested.getChild(0), bindings, context);
        }
        if (node instanceof AstChoice choice) {
            boolean condition = PyValues.truthy(choice.getChild(0).eval(bindings, context));
            return of(choice.getChild(condition ? 1 : 2), bindings, context);
        }
        if (node instanceof FilterNodes.Filter filter) {
            Object result = filter.result(bindings, context);
            return result == PyFilter.UNDEFINED ? ABSENT : new Presence(true, result);
        }
        if (node instanceof AstIdentifier id) {
            return variable(id.getName(), node.eval(bindings, context));
        }
        if (node instanceof AccessNodes.Dot dot) {
            Object base = dot.base().eval(bindings, context);
            return member(base, dot.name(), node, bindings, context);
        }
        if (node instanceof AccessNodes.Bracket bracket) {
            Object base = bracket.base().eval(bindings, context);
            if (base == null) {
                return ABSENT;
            }
            return member(base, bracket.key(bindings, context), node, bindings, context);
        }
        return new Presence(true, node.eval(bindings, context));
    }

    /**
     * Fails as Jinja2 does when an attribute or item is looked up on {@code base}, which gave
     * null: an undefined variable, an attribute the owner lacks, or an item of None are errors
     * (a None base itself just gives undefined, which the caller returns).
     */
    static void requireDefined(AstNode base, Bindings bindings, ELContext context) {
        if (base instanceof AstIdentifier id) {
            if (!variable(id.getName(), null).present()) {
                throw PyErrors.undefined("'" + id.getName() + "' is undefined");
            }
            return;
        }
        AstNode ownerNode;
        String key;
        if (base instanceof AccessNodes.Dot dot) {
            ownerNode = dot.base();
            key = dot.name();
        } else if (base instanceof AccessNodes.Bracket bracket) {
            ownerNode = bracket.base();
            key = PyRepr.str(bracket.key(bindings, context));
        } else {
            return;
        }
        if (of(base, bindings, context).present()) {
            return;
        }
        Object owner = ownerNode.eval(bindings, context);
        if (owner != null) {
            throw PyErrors.undefined("'" + describe(owner) + "' has no attribute '" + key + "'");
        }
        if (of(ownerNode, bindings, context).present()) {
            throw PyErrors.undefined(base instanceof AccessNodes.Dot ? "'None' has no attribute '" + key + "'"
                    : "None has no element " + key);
        }
        requireDefined(ownerNode, bindings, context);
    }

    private static String describe(Object owner) {
        return PyValues.typeName(owner) + " object";
    }

    private static Presence variable(String name, Object value) {
        if (value != null) {
            return new Presence(true, value);
        }
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        for (ScopeMap<String, Object> scope = interpreter.getContext(); scope != null; scope = scope.getParent()) {
            if (scope.getScope().containsKey(name)) {
                return scope.getScope().get(name) == Scopes.UNDEFINED ? ABSENT : new Presence(true, null);
            }
        }
        Context context = interpreter.getContext();
        if (context.getFunction(":" + name) != null || context.getGlobalMacro(name) != null) {
            return new Presence(true, null);
        }
        return ABSENT;
    }

    private static Presence member(Object base, Object key, AstNode node, Bindings bindings, ELContext context) {
        if (base == null) {
            return ABSENT;
        }
        Object unwrapped = PyValues.unwrap(base);
        if (unwrapped instanceof Map<?, ?> m) {
            Object k = key instanceof String || key == null ? key : PyRepr.str(key);
            if (m.containsKey(k)) {
                return new Presence(true, m.get(k));
            }
            if (unwrapped instanceof LoopContext) {
                return new Presence(true, node.eval(bindings, context));
            }
            return ABSENT;
        }
        if (PyValues.isList(unwrapped) && key instanceof Number n) {
            List<Object> items = PyValues.iterate(unwrapped);
            long i = n.longValue() < 0 ? n.longValue() + items.size() : n.longValue();
            return i >= 0 && i < items.size() ? new Presence(true, items.get((int) i)) : ABSENT;
        }
        Object v = node.eval(bindings, context);
        return v == null ? ABSENT : new Presence(true, v);
    }
}
