package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.BiPredicate;
import java.util.function.Predicate;

/**
 * Jinja2's tests (the {@code is} operator and select/selectattr), with their aliases and
 * Python's types. defined, undefined and none are answered from the expression itself where
 * it is written ({@link FilterNodes.PresenceTest}); the versions here see only a value.
 */
final class JinjaTests {
    private JinjaTests() {
    }

    /** A test over the value and its arguments. */
    private record PyTest(String name, BiPredicate<Object, Object[]> body) implements ExpTest {
        @Override
        public String getName() {
            return name;
        }

        @Override
        public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
            return body.test(PyValues.unwrap(var), args == null ? new Object[0] : args);
        }
    }

    static List<ExpTest> all() {
        List<ExpTest> out = new ArrayList<>();
        simple(out, "defined", v -> true);
        simple(out, "undefined", v -> false);
        simple(out, "none", v -> v == null);
        simple(out, "boolean", v -> v instanceof Boolean);
        simple(out, "true", v -> Boolean.TRUE.equals(v));
        simple(out, "false", v -> Boolean.FALSE.equals(v));
        simple(out, "integer", PyValues::isInteger);
        simple(out, "float", PyValues::isFloat);
        simple(out, "number", PyValues::isNumber);
        simple(out, "string", PyValues::isString);
        simple(out, "mapping", PyValues::isMapping);
        simple(out, "iterable", PyValues::isIterable);
        simple(out, "sequence", PyValues::isSequence);
        simple(out, "callable", v -> false);
        simple(out, "escaped", v -> false);
        simple(out, "lower", v -> PyValues.isString(v) && PyValues.string(v).equals(PyValues.string(v).toLowerCase(Locale.ROOT))
                && PyValues.string(v).codePoints().anyMatch(Character::isLetter));
        simple(out, "upper", v -> PyValues.isString(v) && PyValues.string(v).equals(PyValues.string(v).toUpperCase(Locale.ROOT))
                && PyValues.string(v).codePoints().anyMatch(Character::isLetter));
        simple(out, "odd", v -> integer(v).testBit(0));
        simple(out, "even", v -> !integer(v).testBit(0));
        out.add(new PyTest("divisibleby", (v, a) -> integer(v).mod(integer(arg(a, "divisibleby")).abs()).signum() == 0));
        out.add(new PyTest("sameas", (v, a) -> {
            Object o = PyValues.unwrap(arg(a, "sameas"));
            return v == o || v instanceof Boolean && v.equals(o);
        }));
        out.add(new PyTest("in", (v, a) -> PyValues.contains(PyValues.unwrap(arg(a, "in")), v)));
        compare(out, (v, o) -> PyValues.eq(v, o), "eq", "equalto", "==");
        compare(out, (v, o) -> !PyValues.eq(v, o), "ne", "!=");
        compare(out, (v, o) -> PyValues.compare(v, o, "<") < 0, "lt", "lessthan", "<");
        compare(out, (v, o) -> PyValues.compare(v, o, "<=") <= 0, "le", "<=");
        compare(out, (v, o) -> PyValues.compare(v, o, ">") > 0, "gt", "greaterthan", ">");
        compare(out, (v, o) -> PyValues.compare(v, o, ">=") >= 0, "ge", ">=");
        out.add(new PyTest("filter", (v, a) -> PyValues.isString(v)
                && JinjavaInterpreter.getCurrent().getContext().getFilter(PyValues.string(v)) != null));
        out.add(new PyTest("test", (v, a) -> PyValues.isString(v)
                && JinjavaInterpreter.getCurrent().getContext().getExpTest(PyValues.string(v)) != null));
        return out;
    }

    private static void simple(List<ExpTest> out, String name, Predicate<Object> test) {
        out.add(new PyTest(name, (v, a) -> test.test(v)));
    }

    private static void compare(List<ExpTest> out, BiPredicate<Object, Object> test, String... names) {
        for (String name : names) {
            out.add(new PyTest(name, (v, a) -> test.test(v, PyValues.unwrap(arg(a, name)))));
        }
    }

    private static Object arg(Object[] args, String test) {
        if (args.length < 1) {
            throw PyErrors.type(test + "() missing 1 required positional argument");
        }
        return args[0];
    }

    private static java.math.BigInteger integer(Object v) {
        if (!PyValues.isNumber(v)) {
            throw PyErrors.type("unsupported operand type(s) for %: '" + PyValues.typeName(v) + "' and 'int'");
        }
        return PyNumbers.isInt(v) ? PyNumbers.bigInt(v) : java.math.BigDecimal.valueOf(PyNumbers.toDouble(v)).toBigInteger();
    }
}
