package io.phxfs.serving.text;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * What Jinja2's map, select, reject, selectattr, rejectattr, unique, batch, slice, items and
 * reverse return: a generator, not a list. It is always true, iterates once, and has no length
 * and no items by index, so {@code messages|selectattr(...)|length} fails and
 * {@code {% if messages|selectattr(...) %}} always holds, as in transformers.
 */
final class PyGenerator implements Iterable<Object> {
    private final Iterator<Object> items;
    private final String kind;

    PyGenerator(List<Object> items, String kind) {
        this.items = items.iterator();
        this.kind = kind;
    }

    /** The items not yet consumed; a second pass finds none, as in Python. */
    List<Object> drain() {
        List<Object> out = new ArrayList<>();
        items.forEachRemaining(out::add);
        return out;
    }

    @Override
    public Iterator<Object> iterator() {
        return items;
    }

    String kind() {
        return kind;
    }

    @Override
    public String toString() {
        return "<" + kind + " object>";
    }
}
