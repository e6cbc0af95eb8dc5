package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.LazyExpression;
import java.util.Optional;

/**
 * Assignments into jinjava's scopes. A scope that holds a name with a null value does not hide
 * the name in outer scopes (jinjava's ScopeMap looks further when it finds null), so a loop
 * variable, macro argument or set variable that is None would show an outer value of the same
 * name. None is therefore stored as {@code Optional.empty()}, which jinjava's object unwrapper
 * turns back into null on every read; an undefined value (a macro argument of an undefined
 * expression, {@code {% set x = missing %}}) as a lazy expression of null, which reads as null
 * too but which {@link Presence} reports as undefined.
 */
final class Scopes {
    static final Object NONE = Optional.empty();
    static final Object UNDEFINED = LazyExpression.of(() -> null, "");

    private Scopes() {
    }

    static Object stored(Object value) {
        return value == null ? NONE : value;
    }

    /** The value to store for {@code value}, where a null is None when {@code defined}, else undefined. */
    static Object stored(Object value, boolean defined) {
        return value != null ? value : defined ? NONE : UNDEFINED;
    }

    static void set(JinjavaInterpreter interpreter, String name, Object value) {
        interpreter.getContext().put(name, stored(value));
    }

    static void set(JinjavaInterpreter interpreter, String name, Object value, boolean defined) {
        interpreter.getContext().put(name, stored(value, defined));
    }
}
