package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.javax.el.ELContext;

/**
 * Calls: by name (jinjava's macro-or-function call), of any expression (Jinja2 macros are
 * values, kept in lists and dicts), with {@code *args} and {@code **kwargs}, and with None
 * arguments stored so that they hide outer variables of the same name ({@link Scopes}).
 */
final class CallNodes {
    private CallNodes() {
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
    static final class NoneSafe extends ExprNode {
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

    /** {@code *args} or {@code **kwargs} in a call's arguments. */
    static final class Unpack extends ExprNode {
        private final AstNode value;
        private final boolean keywords;

        Unpack(AstNode value, boolean keywords) {
            this.value = value;
            this.keywords = keywords;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            return new Unpacked(PyValues.unwrap(value.eval(bindings, context)), keywords);
        }
    }

    /** The value of an {@link Unpack} argument, expanded by the call. */
    record Unpacked(Object value, boolean keywords) {
    }

    /** Expands {@code *args} and {@code **kwargs} into positional values and named parameters. */
    static List<Object> expand(Object[] values) {
        List<Object> out = new ArrayList<>();
        for (Object v : values) {
            if (v instanceof Unpacked u && u.keywords()) {
                if (!(u.value() instanceof Map<?, ?> m)) {
                    throw PyErrors.type("argument after ** must be a mapping, not " + PyValues.typeName(u.value()));
                }
                m.forEach((k, x) -> out.add(new NamedParameter(PyRepr.str(k), Scopes.stored(x))));
            } else if (v instanceof Unpacked u) {
                for (Object x : PyValues.iterate(u.value())) {
                    out.add(Scopes.stored(x));
                }
            } else {
                out.add(v);
            }
        }
        return out;
    }

    /** A call by name: jinjava's macro-or-function call, with {@code *args} unpacked for macros. */
    static final class FunctionCall extends com.hubspot.jinjava.el.ext.AstMacroFunction {
        FunctionCall(String name, int index, AstParameters params, boolean varargs) {
            super(name, index, params, varargs);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            AstParameters params = (AstParameters) getChild(0);
            boolean unpacks = false;
            for (int i = 0; i < params.getCardinality(); i++) {
                AstNode p = params.getChild(i);
                unpacks |= p instanceof NoneSafe n && n.argument instanceof Unpack;
            }
            if (!unpacks) {
                return super.eval(bindings, context);
            }
            return Call.invoke(JinjavaInterpreter.getCurrent().getContext().getGlobalMacro(getName()), getName(),
                    expand(params.eval(bindings, context)));
        }
    }

    /** {@code expression(args)}: calls what the expression gives, a macro (Jinja2 macros are values). */
    static final class Call extends ExprNode {
        private final AstNode target;
        private final List<AstNode> args;

        Call(AstNode target, List<AstNode> args) {
            this.target = target;
            this.args = args;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object callee = PyValues.unwrap(target.eval(bindings, context));
            Object[] values = new Object[args.size()];
            for (int i = 0; i < values.length; i++) {
                values[i] = new NoneSafe(args.get(i)).eval(bindings, context);
            }
            return invoke(callee, target.toString(), expand(values));
        }

        static Object invoke(Object callee, String name, List<Object> args) {
            if (callee instanceof com.hubspot.jinjava.lib.fn.MacroFunction macro) {
                return macro.evaluate(args.toArray());
            }
            throw PyErrors.type("'" + (callee == null ? name : PyValues.typeName(callee)) + "' object is not callable");
        }
    }

    /** A variable; a macro's name is one too, as in Jinja2. */
    static final class Name extends jinjava.de.odysseus.el.tree.impl.ast.AstIdentifier {
        Name(String name, int index) {
            super(name, index);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object v = super.eval(bindings, context);
            if (v == null) {
                JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
                if (interpreter != null && !interpreter.getContext().containsKey(getName())) {
                    com.hubspot.jinjava.lib.fn.MacroFunction macro = interpreter.getContext().getGlobalMacro(getName());
                    if (macro != null) {
                        return macro;
                    }
                }
            }
            return v;
        }
    }
}
