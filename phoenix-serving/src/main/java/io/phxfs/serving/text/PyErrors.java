package io.phxfs.serving.text;

import jinjava.javax.el.ELException;

/**
 * The errors Python raises while rendering (TypeError, UndefinedError, ...), as exceptions that
 * end the render. Expression code throws them wrapped in an {@link ELException}, the one form
 * jinjava's expression resolver passes on instead of recording and carrying on.
 */
final class PyErrors {
    private PyErrors() {
    }

    static ELException type(String message) {
        return fail("TypeError: " + message);
    }

    static ELException value(String message) {
        return fail("ValueError: " + message);
    }

    static ELException undefined(String message) {
        return fail("UndefinedError: " + message);
    }

    static ELException fail(String message) {
        return new ELException(message, new TemplateAbort(message, false));
    }

    /** The template's raise_exception(message). */
    static ELException raised(String message) {
        return new ELException(message, new TemplateAbort(message, true));
    }
}
