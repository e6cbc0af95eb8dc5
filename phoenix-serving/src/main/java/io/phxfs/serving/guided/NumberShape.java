package io.phxfs.serving.guided;

/** A JSON number, or an integer (no fraction, no exponent: the grammar xgrammar enforces for {@code integer}). */
final class NumberShape implements ValueShape {
    static final NumberShape NUMBER = new NumberShape(false);
    static final NumberShape INTEGER = new NumberShape(true);

    private final boolean integerOnly;

    private NumberShape(boolean integerOnly) {
        this.integerOnly = integerOnly;
    }

    boolean integerOnly() {
        return integerOnly;
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        int phase = NumberLexer.next(NumberLexer.START, b);
        if (phase >= 0) {
            out.add(below.push(new NumberFrame(this, phase, 1)));
        }
    }

    @Override
    public String toString() {
        return integerOnly ? "integer" : "number";
    }
}
