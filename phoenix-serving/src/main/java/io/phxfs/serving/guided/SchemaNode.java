package io.phxfs.serving.guided;

import java.util.ArrayList;
import java.util.List;

/**
 * A compiled schema: the alternative shapes a value may take. While compiling, a node collects its
 * own shapes and the nodes it unites ({@code anyOf}, {@code oneOf}, {@code $ref}, a one-schema
 * {@code allOf}); {@link #resolve} then flattens them once into {@link #alternatives()}, merging
 * all literals into one trie, so that matching never walks references.
 */
final class SchemaNode {
    private final String pointer;
    private final List<ValueShape> own = new ArrayList<>();
    private final List<SchemaNode> united = new ArrayList<>();
    private ValueShape[] alternatives;
    private boolean resolving;

    SchemaNode(String pointer) {
        this.pointer = pointer;
    }

    /** A node whose alternatives are known at once. */
    static SchemaNode of(String pointer, ValueShape... shapes) {
        SchemaNode node = new SchemaNode(pointer);
        node.alternatives = shapes.clone();
        return node;
    }

    String pointer() {
        return pointer;
    }

    void addShape(ValueShape shape) {
        own.add(shape);
    }

    void unite(SchemaNode other) {
        united.add(other);
    }

    /** The flattened alternatives; empty when no value matches (the {@code false} schema). */
    ValueShape[] alternatives() {
        return alternatives;
    }

    /**
     * Flattens this node's alternatives.
     *
     * @throws UnsupportedSchemaException for a reference cycle that reads no byte, as in
     *         {@code {"anyOf": [{"$ref": "#"}]}}, which describes no value
     */
    void resolve() {
        if (alternatives != null) {
            return;
        }
        if (resolving) {
            throw new UnsupportedSchemaException(pointer, "$ref", "it refers back to itself without an object or array in between");
        }
        resolving = true;
        List<ValueShape> shapes = new ArrayList<>();
        List<LiteralSet> literals = new ArrayList<>();
        collect(own, shapes, literals);
        for (SchemaNode u : united) {
            u.resolve();
            collect(List.of(u.alternatives), shapes, literals);
        }
        if (literals.size() == 1) {
            shapes.add(literals.get(0));
        } else if (literals.size() > 1) {
            shapes.add(LiteralSet.union(literals));
        }
        // a number alternative already takes every integer
        if (shapes.contains(NumberShape.NUMBER)) {
            shapes.remove(NumberShape.INTEGER);
        }
        alternatives = shapes.toArray(ValueShape[]::new);
        resolving = false;
    }

    private static void collect(List<ValueShape> from, List<ValueShape> shapes, List<LiteralSet> literals) {
        for (ValueShape s : from) {
            if (s instanceof LiteralSet l) {
                if (!l.isEmpty() && !literals.contains(l)) {
                    literals.add(l);
                }
            } else if (!shapes.contains(s)) {
                shapes.add(s);
            }
        }
    }

    @Override
    public String toString() {
        return "schema at '" + pointer + "'";
    }
}
