package io.phxfs.serving.guided;

/**
 * An array's layout: the schemas of its first items ({@code prefixItems}), of the items after them
 * ({@code items}; null when no more are allowed) and the bounds on its length.
 */
final class ArrayShape implements ValueShape {
    static final int UNBOUNDED = Integer.MAX_VALUE;

    private final String pointer;
    private final SchemaNode[] prefix;
    private final SchemaNode rest;
    final int minItems;
    final int maxItems;
    /** Past this many items, counts make no difference (with no max), so long arrays share states. */
    private final int countCap;

    ArrayShape(String pointer, SchemaNode[] prefix, SchemaNode rest, int minItems, int maxItems) {
        this.pointer = pointer;
        this.prefix = prefix;
        this.rest = rest;
        this.minItems = minItems;
        this.maxItems = maxItems;
        this.countCap = maxItems == UNBOUNDED ? Math.max(minItems, prefix.length) : maxItems;
    }

    /** The schema of the item at {@code index}, or null when the array may not have such an item. */
    SchemaNode item(int index) {
        if (index >= maxItems) {
            return null;
        }
        SchemaNode node = index < prefix.length ? prefix[index] : rest;
        return node == null || node.alternatives().length == 0 ? null : node;
    }

    int countAfter(int count) {
        return Math.min(count + 1, countCap);
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        if (b == '[') {
            out.add(below.push(new ArrayFrame(this, ArrayFrame.AFTER_OPEN, 0, 0)));
        }
    }

    @Override
    public String toString() {
        return "array" + pointer;
    }
}
