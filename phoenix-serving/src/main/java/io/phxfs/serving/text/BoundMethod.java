package io.phxfs.serving.text;

import java.util.Set;

/**
 * A method named without being called ({@code message.items}), which Jinja2 gives instead of a
 * dict's item of the same name: it is true, prints as Python prints a method, and has no
 * attributes or items (no getters either, so that jinjava's bean resolver finds none).
 */
final class BoundMethod {
    static final Set<String> DICT_METHODS = Set.of("clear", "copy", "fromkeys", "get", "items", "keys", "pop",
            "popitem", "setdefault", "update", "values");

    private final String description;

    BoundMethod(String name, String type) {
        this.description = "<built-in method " + name + " of " + type + " object>";
    }

    @Override
    public String toString() {
        return description;
    }
}
