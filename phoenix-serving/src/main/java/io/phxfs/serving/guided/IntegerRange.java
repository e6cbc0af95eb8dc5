package io.phxfs.serving.guided;

/**
 * An integer schema with bounds ({@code minimum}, {@code maximum} and their exclusive forms, made
 * inclusive over the longs): the digits are read one by one, and each must leave some integer in
 * the range that the digits so far can still become, so that the output never paints itself
 * into a corner. Written as JSON writes integers, {@code -?(0|[1-9][0-9]*)}, without {@code -0}.
 */
final class IntegerRange implements ValueShape {
    /** The most digits a long has. */
    private static final int MAX_DIGITS = 19;

    final long lo;
    final long hi;

    /** The integers from {@code lo} to {@code hi}, both included; {@code lo <= hi}. */
    IntegerRange(long lo, long hi) {
        this.lo = lo;
        this.hi = hi;
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        IntegerRangeFrame f = IntegerRangeFrame.START.read(this, b);
        if (f != null) {
            out.add(below.push(f));
        }
    }

    /** Whether the value {@code negative ? -magnitude : magnitude} is in the range. */
    boolean contains(boolean negative, long magnitude) {
        long v = negative ? -magnitude : magnitude;
        return v >= lo && v <= hi;
    }

    /**
     * Whether some integer in the range is written with the {@code digits} digits of
     * {@code magnitude} (no leading zero, at least one digit) and then perhaps more digits.
     */
    boolean reachable(boolean negative, long magnitude, int digits) {
        long first = magnitude; // the smallest magnitude with j more digits: magnitude * 10^j
        long span = 1; // how many magnitudes j more digits cover: 10^j
        for (int n = digits; n <= MAX_DIGITS; n++) {
            long last = first + (span - 1);
            if (last < first) {
                return false; // past the longs
            }
            // the values written so: [first, last], or [-last, -first]
            boolean meets = negative ? -first >= lo && -last <= hi : first <= hi && last >= lo;
            if (meets) {
                return true;
            }
            if (first > Long.MAX_VALUE / 10) {
                return false;
            }
            first *= 10;
            span *= 10;
        }
        return false;
    }

    @Override
    public String toString() {
        return "integer[" + lo + ".." + hi + "]";
    }
}
