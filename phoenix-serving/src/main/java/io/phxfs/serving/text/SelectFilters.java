package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import java.util.ArrayList;
import java.util.List;

/**
 * Jinja2's filters that apply a test or another filter to every item: map, select, reject,
 * selectattr, rejectattr, and attr. Whether an attribute is defined is a question of the
 * dict's keys, so {@code selectattr('tool_calls', 'defined')} keeps the messages that have them.
 */
final class SelectFilters {
    private SelectFilters() {
    }

    static List<PyFilter> all() {
        List<PyFilter> out = new ArrayList<>();
        out.add(new PyFilter("map", SelectFilters::map));
        out.add(new PyFilter("select", (v, a, in) -> select(v, a, in, false, false)));
        out.add(new PyFilter("reject", (v, a, in) -> select(v, a, in, true, false)));
        out.add(new PyFilter("selectattr", (v, a, in) -> select(v, a, in, false, true)));
        out.add(new PyFilter("rejectattr", (v, a, in) -> select(v, a, in, true, true)));
        out.add(new PyFilter("attr", (v, a, in) -> Attributes.get(v, a.get(0, "name"))));
        return out;
    }

    private static Object map(Object v, Args a, PyFilter.Input in) {
        List<Object> items = SequenceFilters.items(v, in);
        List<Object> out = new ArrayList<>();
        if (a.positional().isEmpty() && a.keywords().containsKey("attribute")) {
            Object attribute = a.keywords().get("attribute");
            boolean hasDefault = a.keywords().containsKey("default");
            for (Object item : items) {
                Presence p = Attributes.lookup(item, attribute);
                out.add(p.present() ? p.value() : hasDefault ? a.keywords().get("default") : null);
            }
            return new PyGenerator(out, "generator");
        }
        if (a.positional().isEmpty()) {
            throw PyErrors.fail("FilterArgumentError: map requires a filter argument");
        }
        String name = PyRepr.str(a.positional().get(0));
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        Filter filter = interpreter.getContext().getFilter(name);
        if (filter == null) {
            throw PyErrors.fail("TemplateRuntimeError: No filter named '" + name + "' found.");
        }
        Args rest = new Args(a.positional().subList(1, a.positional().size()), a.keywords());
        for (Object item : items) {
            out.add(filter instanceof PyFilter py ? py.apply(item, rest, interpreter, null, null, null)
                    : filter.filter(item, interpreter, rest.positional().toArray(), rest.keywords()));
        }
        return new PyGenerator(out, "generator");
    }

    private static Object select(Object v, Args a, PyFilter.Input in, boolean reject, boolean byAttribute) {
        List<Object> positional = a.positional();
        Object attribute = null;
        int at = 0;
        if (byAttribute) {
            if (positional.isEmpty()) {
                throw PyErrors.type("selectattr needs an attribute");
            }
            attribute = positional.get(0);
            at = 1;
        }
        String test = positional.size() > at ? PyRepr.str(positional.get(at)) : null;
        Object[] testArgs = positional.size() > at + 1 ? positional.subList(at + 1, positional.size()).toArray()
                : new Object[0];
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        ExpTest exp = test == null ? null : interpreter.getContext().getExpTest(test);
        if (test != null && exp == null) {
            throw PyErrors.fail("TemplateRuntimeError: No test named '" + test + "' found.");
        }
        List<Object> out = new ArrayList<>();
        for (Object item : SequenceFilters.items(v, in)) {
            Presence p = attribute == null ? new Presence(true, item) : Attributes.lookup(item, attribute);
            boolean passed;
            if (test == null) {
                passed = PyValues.truthy(p.value());
            } else if (test.equals("defined") || test.equals("undefined")) {
                passed = p.present() == test.equals("defined");
            } else if (test.equals("none")) {
                passed = p.present() && p.value() == null;
            } else {
                passed = exp.evaluate(p.value(), interpreter, testArgs);
            }
            if (passed != reject) {
                out.add(item);
            }
        }
        return new PyGenerator(out, "generator");
    }
}
