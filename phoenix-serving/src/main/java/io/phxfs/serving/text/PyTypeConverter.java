package io.phxfs.serving.text;

import com.hubspot.jinjava.el.TruthyTypeConverter;

/** jinjava's type converter with Python's truthiness, which decides {@code a if cond else b}. */
final class PyTypeConverter extends TruthyTypeConverter {
    private static final long serialVersionUID = 1L;

    @Override
    protected Boolean coerceToBoolean(Object value) {
        return PyValues.truthy(value);
    }
}
