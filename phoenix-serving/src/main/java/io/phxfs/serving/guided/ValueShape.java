package io.phxfs.serving.guided;

/**
 * One alternative kind of value a compiled schema allows (a string with length bounds, a number, a
 * set of literals, an object or array layout), knowing how to begin on a value's first byte.
 * Shapes are built once per schema location and compare by identity.
 */
sealed interface ValueShape permits StringShape, FormatShape, PatternShape, NumberShape, IntegerRange, LiteralSet, ObjectShape, ArrayShape {
    /**
     * If {@code b} can be the first byte of a value of this shape, adds the configuration after it
     * on top of {@code below} (the container waiting for the value).
     */
    void start(int b, FrameStack below, Successors out);
}
