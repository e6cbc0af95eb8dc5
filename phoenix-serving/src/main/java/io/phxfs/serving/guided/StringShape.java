package io.phxfs.serving.guided;

/**
 * A string value or an object key: its length bounds in characters (code points, an escape
 * counting as the one character it encodes), and for the free keys of an object with declared
 * properties, the declared names they must differ from.
 */
final class StringShape implements ValueShape {
    static final int UNBOUNDED = Integer.MAX_VALUE;
    /** Any string, the shape of the {@code {"type":"string"}} schema and of free object keys. */
    static final StringShape ANY = new StringShape(0, UNBOUNDED, null);

    final int minLength;
    final int maxLength;
    /**
     * The character count a frame keeps: past it counts make no difference (the max, or the min
     * when there is no max), so long strings reach the same state.
     */
    final int countCap;
    /** The names a free key must not equal, or null. */
    final KeyExclusion excluded;

    StringShape(int minLength, int maxLength, KeyExclusion excluded) {
        this.minLength = minLength;
        this.maxLength = maxLength;
        this.countCap = maxLength == UNBOUNDED ? minLength : maxLength;
        this.excluded = excluded;
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        if (b == '"') {
            out.add(below.push(StringFrame.opened(this)));
        }
    }

    @Override
    public String toString() {
        return "string[" + minLength + ".." + (maxLength == UNBOUNDED ? "" : maxLength) + "]";
    }
}
