package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.NamedParameter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ELResolver;

/**
 * Python's methods on the values templates hold, resolved before jinjava's bean resolver (which
 * would offer Java's methods: {@code String.strip()} with Java's whitespace, no
 * {@code startswith}): str methods ({@link PyStrings}), the dict methods {@code get},
 * {@code items}, {@code keys} and {@code values}, the list methods {@code index} and
 * {@code count}, the loop's {@code cycle} and {@code changed}, and indexing a string by code
 * point. Methods that would change a list or dict fail, as in Jinja2's immutable sandbox, and
 * so does any other method name on those types: none of Java's methods are reachable on them.
 */
final class PyResolver extends CompositeELResolver {
    /** Resolves what Python resolves, and hands everything else to {@code fallback}. */
    PyResolver(ELResolver fallback) {
        add(fallback);
    }

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        Object own = ownValue(context, base, property);
        return context.isPropertyResolved() ? own : super.getValue(context, base, property);
    }

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        Object own = ownInvoke(context, base, method, params);
        return context.isPropertyResolved() ? own : super.invoke(context, base, method, paramTypes, params);
    }

    private Object ownValue(ELContext context, Object base, Object property) {
        context.setPropertyResolved(false);
        Object b = PyValues.unwrap(base);
        if (b instanceof SequenceFilters.Group g && property instanceof String name
                && (name.equals("grouper") || name.equals("list"))) {
            context.setPropertyResolved(true);
            return g.attribute(name);
        }
        if (b instanceof PyGenerator) {
            // Jinja2's getitem turns the TypeError into undefined
            context.setPropertyResolved(true);
            return null;
        }
        if (PyValues.isString(b) && property != null) {
            // a str has characters and methods, no Java bean properties
            context.setPropertyResolved(true);
            Long index = index(property);
            if (index == null) {
                return null;
            }
            String s = PyValues.string(b);
            int n = s.codePointCount(0, s.length());
            long i = index < 0 ? index + n : index;
            if (i < 0 || i >= n) {
                return null;
            }
            int at = s.offsetByCodePoints(0, (int) i);
            return new String(Character.toChars(s.codePointAt(at)));
        }
        return null;
    }

    private static Long index(Object property) {
        if (PyNumbers.isInt(property)) {
            return (long) PyNumbers.toDouble(property);
        }
        if (property instanceof String s && s.matches("-?\\d{1,9}")) {
            return Long.parseLong(s);
        }
        return null;
    }

    private Object ownInvoke(ELContext context, Object base, Object method, Object[] params) {
        context.setPropertyResolved(false);
        if (base == null || method == null) {
            return null;
        }
        String name = method.toString();
        Object b = PyValues.unwrap(base);
        Args args = args(params);
        Object result;
        if (PyValues.isString(b)) {
            if (!PyStrings.has(name)) {
                throw noAttribute("str", name);
            }
            result = PyStrings.call(PyValues.string(b), name, args);
        } else if (b instanceof LoopContext loop && (name.equals("cycle") || name.equals("changed"))) {
            result = name.equals("cycle") ? loop.cycle(args.positional()) : loop.changed(args.positional());
        } else if (b instanceof Map<?, ?> map && PyValues.unwrap(map.get(name)) instanceof
                com.hubspot.jinjava.lib.fn.MacroFunction macro) {
            // d.key(...) where d holds a macro: Jinja2 calls the item
            result = macro.evaluate(params == null ? new Object[0] : params);
        } else if (b instanceof Map<?, ?> map) {
            result = dictMethod(map, name, args);
            if (result == NOT_A_METHOD) {
                throw noAttribute(b instanceof LoopContext ? "LoopContext" : "dict", name);
            }
        } else if (PyValues.isList(b)) {
            result = listMethod(PyValues.iterate(b), name, args);
            if (result == NOT_A_METHOD) {
                throw noAttribute("list", name);
            }
        } else if (b instanceof PyGenerator || b instanceof BoundMethod) {
            throw noAttribute(PyValues.typeName(b), name);
        } else {
            return null;
        }
        context.setPropertyResolved(true);
        return result;
    }

    private static final Object NOT_A_METHOD = new Object();

    private static Object dictMethod(Map<?, ?> map, String name, Args args) {
        switch (name) {
            case "get" -> {
                Object key = args.get(0, "key");
                Object k = key == null || key instanceof String ? key : PyRepr.str(key);
                return map.containsKey(k) ? map.get(k) : args.opt(1, "default", null);
            }
            case "items" -> {
                List<Object> items = new ArrayList<>();
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    items.add(new PyTuple(java.util.Arrays.asList(e.getKey(), e.getValue())));
                }
                return items;
            }
            case "keys" -> {
                return new ArrayList<Object>(map.keySet());
            }
            case "values" -> {
                return new ArrayList<Object>(map.values());
            }
            case "copy" -> {
                return new LinkedHashMap<Object, Object>(map);
            }
            case "pop", "popitem", "setdefault", "update", "clear" -> throw unsafe(name, "dict");
            default -> {
                return NOT_A_METHOD;
            }
        }
    }

    private static Object listMethod(List<Object> list, String name, Args args) {
        switch (name) {
            case "index" -> {
                Object item = args.get(0, "value");
                for (int i = 0; i < list.size(); i++) {
                    if (PyValues.eq(list.get(i), item)) {
                        return (long) i;
                    }
                }
                throw PyErrors.value(PyRepr.repr(item) + " is not in list");
            }
            case "count" -> {
                Object item = args.get(0, "value");
                return list.stream().filter(o -> PyValues.eq(o, item)).count();
            }
            case "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear" -> throw unsafe(name, "list");
            default -> {
                return NOT_A_METHOD;
            }
        }
    }

    /**
     * Calling anything but Python's methods on a str, dict or list: Java's would run otherwise
     * ({@code d.put(...)} changing the caller's messages, {@code s.repeat(...)}), which Jinja2's
     * sandbox has no equivalent of.
     */
    private static RuntimeException noAttribute(String type, String name) {
        return PyErrors.undefined("'" + type + " object' has no attribute '" + name + "'");
    }

    private static RuntimeException unsafe(String name, String type) {
        return PyErrors.fail("SecurityError: access to attribute '" + name + "' of '" + type + "' object is unsafe.");
    }

    private static Args args(Object[] params) {
        if (params == null || params.length == 0) {
            return Args.NONE;
        }
        List<Object> positional = new ArrayList<>();
        Map<String, Object> keywords = new LinkedHashMap<>();
        for (Object p : params) {
            if (p instanceof NamedParameter n) {
                keywords.put(n.getName(), n.getValue());
            } else {
                positional.add(p);
            }
        }
        return new Args(positional, keywords);
    }
}
