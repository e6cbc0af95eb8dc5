package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.fn.MacroFunction;
import com.hubspot.jinjava.tree.Node;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A macro called as Jinja2's {@code Macro.__call__} binds its arguments: positional ones first,
 * then keywords for the parameters left; a parameter neither given nor defaulted is undefined
 * (not None); defaults are evaluated at each call, in the macro's scope, so they may use the
 * parameters before them; extra positional arguments become the tuple {@code varargs} and extra
 * keywords the dict {@code kwargs} only when the body uses those names, else the call fails
 * with Jinja2's TypeError.
 */
final class PyMacroFunction extends MacroFunction {
    private static final Pattern VARARGS = Pattern.compile("\\bvarargs\\b");
    private static final Pattern KWARGS = Pattern.compile("\\bkwargs\\b");

    private final PyMacroTag.Signature signature;
    private final boolean catchVarargs;
    private final boolean catchKwargs;
    private final int line;

    PyMacroFunction(List<Node> content, PyMacroTag.Signature signature, String body, Context scope, int line,
            int position) {
        super(content, signature.name(), placeholders(signature), false, scope, line, position);
        this.signature = signature;
        this.catchVarargs = VARARGS.matcher(body).find();
        this.catchKwargs = KWARGS.matcher(body).find();
        this.line = line;
    }

    private static LinkedHashMap<String, Object> placeholders(PyMacroTag.Signature signature) {
        LinkedHashMap<String, Object> out = new LinkedHashMap<>();
        signature.parameters().forEach(p -> out.put(p, null));
        return out;
    }

    @Override
    public Object evaluate(Object... args) {
        List<String> parameters = signature.parameters();
        List<Object> positional = new ArrayList<>();
        Map<String, Object> keywords = new LinkedHashMap<>();
        for (Object a : args) {
            if (a instanceof NamedParameter named) {
                keywords.put(named.getName(), named.getValue());
            } else {
                positional.add(a);
            }
        }
        Object[] bound = new Object[parameters.size()];
        boolean[] given = new boolean[parameters.size()];
        int n = Math.min(positional.size(), parameters.size());
        for (int i = 0; i < n; i++) {
            bound[i] = positional.get(i);
            given[i] = true;
        }
        if (n < parameters.size()) {
            for (int i = n; i < parameters.size(); i++) {
                if (keywords.containsKey(parameters.get(i))) {
                    bound[i] = keywords.remove(parameters.get(i));
                    given[i] = true;
                }
            }
        }
        if (!catchKwargs && !keywords.isEmpty()) {
            throw PyErrors.type("macro '" + getName() + "' takes no keyword argument '"
                    + keywords.keySet().iterator().next() + "'");
        }
        if (!catchVarargs && positional.size() > parameters.size()) {
            throw PyErrors.type("macro '" + getName() + "' takes not more than " + parameters.size() + " argument(s)");
        }
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        try (var _ = interpreter.enterScope()) {
            Map<String, Object> argMap = new LinkedHashMap<>();
            for (int i = 0; i < parameters.size(); i++) {
                Object value = bound[i];
                if (!given[i]) {
                    String expression = signature.defaults().get(i);
                    value = expression == null ? Scopes.UNDEFINED : defaultValue(interpreter, expression);
                }
                interpreter.getContext().put(parameters.get(i), value);
                argMap.put(parameters.get(i), value);
            }
            Map<String, Object> kwargs = new LinkedHashMap<>();
            keywords.forEach((k, v) -> kwargs.put(k, plain(v)));
            List<Object> varargs = new ArrayList<>();
            for (int i = parameters.size(); i < positional.size(); i++) {
                varargs.add(plain(positional.get(i)));
            }
            return getEvaluationResult(argMap, kwargs, new PyTuple(varargs), interpreter);
        }
    }

    /** An argument as a value inside a tuple or dict: None and undefined are null there. */
    private static Object plain(Object v) {
        return v instanceof com.hubspot.jinjava.interpret.LazyExpression ? null : PyValues.unwrap(v);
    }

    private Object defaultValue(JinjavaInterpreter interpreter, String expression) {
        Object value = interpreter.resolveELExpression(expression, line);
        if (value != null) {
            return value;
        }
        boolean defined = Boolean.TRUE.equals(interpreter.resolveELExpression("(" + expression + ") is defined", line));
        return Scopes.stored(null, defined);
    }
}
