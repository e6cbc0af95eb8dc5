package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;

/**
 * A filter with Jinja2's semantics, called by {@link FilterNodes.Filter} with Python-bound
 * arguments and, for the filters that care (default, string, tojson), a way to ask whether a
 * null input is None or undefined.
 */
final class PyFilter implements Filter {
    /**
     * What a filter returns for Jinja2's Undefined result (first or last of an empty sequence,
     * min or max of nothing): null to whatever reads the value, undefined to {@link Presence}.
     */
    static final Object UNDEFINED = new Object() {
        @Override
        public String toString() {
            return "Undefined";
        }
    };

    /** The filter's work. */
    @FunctionalInterface
    interface Body {
        Object apply(Object value, Args args, Input input);
    }

    /** The filtered expression, for filters that treat None and undefined differently. */
    record Input(AstNode node, Bindings bindings, ELContext context) {
        /** Whether a null value is None (defined) rather than undefined. */
        boolean defined() {
            return node == null || Presence.of(node, bindings, context).present();
        }

        /** str() of the value: None prints as "None", undefined as nothing. */
        String text(Object value) {
            if (value == null) {
                return defined() ? "None" : "";
            }
            return PyRepr.str(value);
        }
    }

    private final String name;
    private final Body body;

    PyFilter(String name, Body body) {
        this.name = name;
        this.body = body;
    }

    @Override
    public String getName() {
        return name;
    }

    Object apply(Object value, Args args, JinjavaInterpreter interpreter, AstNode node, Bindings bindings,
            ELContext context) {
        return body.apply(value, args, new Input(node, bindings, context));
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
        return value(body.apply(var, new Args(Arrays.asList(args), kwargs), new Input(null, null, null)));
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
        return value(body.apply(var, new Args(List.of((Object[]) args), Map.of()), new Input(null, null, null)));
    }

    /** A filter's result as a value: {@link #UNDEFINED} reads as null. */
    static Object value(Object result) {
        return result == UNDEFINED ? null : result;
    }
}
