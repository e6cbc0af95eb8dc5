package io.phxfs.serving.guided;

/**
 * Inside an integer with bounds ({@link IntegerRange}). Like {@link NumberFrame}, it ends where a
 * byte cannot continue it, and hands that byte to its container.
 *
 * @param range the bounds, null only in {@link #START}
 * @param phase {@link #SIGN} after a lone minus, {@link #ZERO} after a 0 (complete, nothing may
 *        follow), {@link #DIGITS} after a digit that is not a leading 0
 * @param negative whether a minus came first
 * @param magnitude the digits read, as a number
 * @param digits how many digits were read
 */
record IntegerRangeFrame(IntegerRange range, int phase, boolean negative, long magnitude, int digits) implements Frame {
    static final int BEFORE = 0;
    static final int SIGN = 1;
    static final int ZERO = 2;
    static final int DIGITS = 3;
    /** Before the first byte: {@link IntegerRange#start} reads the first byte from here. */
    static final IntegerRangeFrame START = new IntegerRangeFrame(null, BEFORE, false, 0, 0);

    /** The frame after byte {@code b} from this one, or null when no integer of the range continues so. */
    IntegerRangeFrame read(IntegerRange r, int b) {
        boolean digit = b >= '0' && b <= '9';
        return switch (phase) {
            case BEFORE -> b == '-' ? (r.lo <= -1 ? new IntegerRangeFrame(r, SIGN, true, 0, 0) : null)
                    : b == '0' ? (r.contains(false, 0) ? new IntegerRangeFrame(r, ZERO, false, 0, 1) : null)
                    : digit ? more(r, false, b - '0', 1) : null;
            // no -0: it is 0, written as 0
            case SIGN -> digit && b != '0' ? more(r, true, b - '0', 1) : null;
            case DIGITS -> digit && magnitude <= (Long.MAX_VALUE - (b - '0')) / 10
                    ? more(r, negative, magnitude * 10 + (b - '0'), digits + 1) : null;
            default -> null; // nothing continues a 0
        };
    }

    private static IntegerRangeFrame more(IntegerRange r, boolean negative, long magnitude, int digits) {
        return r.reachable(negative, magnitude, digits) ? new IntegerRangeFrame(r, DIGITS, negative, magnitude, digits) : null;
    }

    private boolean complete() {
        return (phase == ZERO || phase == DIGITS) && range.contains(negative, magnitude);
    }

    @Override
    public void step(int b, FrameStack self, Successors out) {
        if (b >= '0' && b <= '9' || b == '-') {
            // a digit never follows a number in JSON, so it cannot be the container's
            IntegerRangeFrame next = read(range, b);
            if (next != null) {
                out.add(self.replaceHead(next));
            }
            return;
        }
        if (complete()) {
            FrameStack below = self.below();
            Frame container = below.head().resume();
            container.step(b, below.replaceHead(container), out);
        }
    }

    @Override
    public boolean acceptsEnd(FrameStack below) {
        return complete() && below.head().resume().acceptsEnd(below.below());
    }
}
