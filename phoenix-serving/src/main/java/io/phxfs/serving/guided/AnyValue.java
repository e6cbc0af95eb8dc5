package io.phxfs.serving.guided;

import java.util.List;

/** The schema that any JSON value matches ({@code {}}, {@code true}), and its object part. */
final class AnyValue {
    /** Any value. */
    static final SchemaNode NODE;
    /** Any object: any keys, any values. */
    static final ObjectShape OBJECT;

    static {
        NODE = new SchemaNode("");
        OBJECT = new ObjectShape("", List.of(), List.of(), List.of(), NODE, List.of());
        ArrayShape array = new ArrayShape("", new SchemaNode[0], NODE, 0, ArrayShape.UNBOUNDED);
        NODE.addShape(OBJECT);
        NODE.addShape(array);
        NODE.addShape(StringShape.ANY);
        NODE.addShape(NumberShape.NUMBER);
        NODE.addShape(LiteralSet.BOOLEAN);
        NODE.addShape(LiteralSet.NULL);
        NODE.resolve();
    }

    private AnyValue() {
    }
}
