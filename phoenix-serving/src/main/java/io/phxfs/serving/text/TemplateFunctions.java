package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.Namespace;
import java.lang.reflect.Method;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The globals of transformers' template environment and Jinja2's that templates call:
 * raise_exception, strftime_now, namespace, dict and range.
 */
final class TemplateFunctions {
    /** Jinja2's sandbox refuses larger ranges. */
    private static final long MAX_RANGE = 100_000;

    private TemplateFunctions() {
    }

    /** The functions, for registering with jinjava. */
    static List<ELFunctionDefinition> all() {
        List<ELFunctionDefinition> out = new ArrayList<>();
        out.add(define("raise_exception", "raiseException", Object.class));
        out.add(define("strftime_now", "strftimeNow", Object.class));
        out.add(define("namespace", "namespace", Object[].class));
        out.add(define("dict", "dict", Object[].class));
        out.add(define("range", "range", Object[].class));
        return out;
    }

    private static ELFunctionDefinition define(String name, String method, Class<?> parameter) {
        try {
            Method m = TemplateFunctions.class.getDeclaredMethod(method, parameter);
            // from this module: jinjava may not open a class of ours itself
            m.setAccessible(true);
            return new ELFunctionDefinition("", name, m);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(e);
        }
    }

    /** transformers' raise_exception: a TemplateError whose message the caller sees verbatim. */
    static Object raiseException(Object message) {
        throw new TemplateAbort(PyRepr.str(PyValues.unwrap(message)), true);
    }

    static String strftimeNow(Object argument) {
        Object format = PyValues.unwrap(argument);
        if (!PyValues.isString(format)) {
            throw new TemplateAbort("TypeError: strftime() argument 1 must be str, not " + PyValues.typeName(format), false);
        }
        RenderState state = RenderState.current();
        LocalDateTime now = state == null ? LocalDateTime.now() : LocalDateTime.now(state.clock());
        return Strftime.format(now, PyValues.string(format));
    }

    static Namespace namespace(Object... args) {
        Map<String, Object> values = new LinkedHashMap<>();
        collect(args, values, "namespace");
        return new Namespace(values);
    }

    static Map<String, Object> dict(Object... args) {
        Map<String, Object> values = new LinkedHashMap<>();
        collect(args, values, "dict");
        return values;
    }

    private static void collect(Object[] args, Map<String, Object> into, String function) {
        for (Object a : args == null ? new Object[0] : args) {
            if (a instanceof NamedParameter p) {
                into.put(p.getName(), PyValues.unwrap(p.getValue()));
            } else if (PyValues.unwrap(a) instanceof Map<?, ?> m) {
                m.forEach((k, v) -> into.put(PyRepr.str(k), v));
            } else {
                throw new TemplateAbort("TypeError: " + function + "() takes a mapping or keyword arguments, not "
                        + PyValues.typeName(a), false);
            }
        }
    }

    static List<Object> range(Object... args) {
        Object[] a = args == null ? new Object[0] : args.clone();
        for (int i = 0; i < a.length; i++) {
            a[i] = PyValues.unwrap(a[i]);
        }
        for (Object o : a) {
            if (!PyNumbers.isInt(o)) {
                throw new TemplateAbort("TypeError: '" + PyValues.typeName(o) + "' object cannot be interpreted as an integer",
                        false);
            }
        }
        long start = 0;
        long stop;
        long step = 1;
        switch (a.length) {
            case 1 -> stop = (long) PyNumbers.toDouble(a[0]);
            case 2, 3 -> {
                start = (long) PyNumbers.toDouble(a[0]);
                stop = (long) PyNumbers.toDouble(a[1]);
                step = a.length == 3 ? (long) PyNumbers.toDouble(a[2]) : 1;
            }
            default -> throw new TemplateAbort("TypeError: range expected 1 to 3 arguments, got " + a.length, false);
        }
        if (step == 0) {
            throw new TemplateAbort("ValueError: range() arg 3 must not be zero", false);
        }
        List<Object> out = new ArrayList<>();
        for (long i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (out.size() >= MAX_RANGE) {
                throw new TemplateAbort("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE ("
                        + MAX_RANGE + ").", false);
            }
            out.add(i);
        }
        return out;
    }
}
