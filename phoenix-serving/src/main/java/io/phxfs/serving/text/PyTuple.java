package io.phxfs.serving.text;

import java.util.AbstractList;
import java.util.List;

/**
 * A tuple literal's value. Python tells tuples from lists where templates can see it: a tuple
 * gives {@code %}-formatting its arguments and prints in parentheses.
 */
class PyTuple extends AbstractList<Object> {
    private final List<Object> items;

    PyTuple(List<Object> items) {
        this.items = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(items));
    }

    @Override
    public Object get(int index) {
        return items.get(index);
    }

    @Override
    public int size() {
        return items.size();
    }
}
