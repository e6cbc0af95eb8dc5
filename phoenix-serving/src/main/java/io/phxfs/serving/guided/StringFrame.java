package io.phxfs.serving.guided;

/**
 * Inside a string (a value or a key), after the opening quote.
 *
 * @param shape the string's schema
 * @param count the characters read so far, capped at {@link StringShape#countCap}
 * @param mode the {@link Utf8StringLexer} mode
 * @param exLo start of the range of excluded names still equal to the bytes read (free keys only)
 * @param exHi end of that range; {@code exLo == exHi} once no name matches
 * @param exPos the bytes compared so far while the range is not empty, else 0
 */
record StringFrame(StringShape shape, int count, int mode, int exLo, int exHi, int exPos) implements Frame {
    static StringFrame opened(StringShape shape) {
        int names = shape.excluded == null ? 0 : shape.excluded.size();
        return new StringFrame(shape, 0, Utf8StringLexer.TEXT, 0, names, 0);
    }

    /**
     * Plain text (whole characters, no quote, backslash or control byte) goes on with the text
     * mode unchanged, fails only past maxLength, and with key exclusions only narrows the range of
     * names, which is checked at the closing quote: so the room is what maxLength leaves.
     */
    @Override
    public int plainTextRoom() {
        if (mode != Utf8StringLexer.TEXT) {
            return -1;
        }
        // the count is exact up to maxLength when there is one (countCap is maxLength then)
        return shape.maxLength == StringShape.UNBOUNDED ? Integer.MAX_VALUE : shape.maxLength - count;
    }

    @Override
    public void step(int b, FrameStack self, Successors out) {
        int r = Utf8StringLexer.step(mode, b, shape.excluded == null);
        if (r < 0) {
            return;
        }
        if ((r & Utf8StringLexer.CLOSES) != 0) {
            if (count >= shape.minLength && (exLo == exHi || !shape.excluded.completes(exLo, exHi, exPos))) {
                Frame.valueCompleted(self.below(), out);
            }
            return;
        }
        int nextCount = count;
        if ((r & Utf8StringLexer.STARTS_CHAR) != 0) {
            if (count >= shape.maxLength) {
                return;
            }
            nextCount = Math.min(count + 1, shape.countCap);
        }
        int lo = exLo;
        int hi = exHi;
        int pos = exPos;
        if (lo < hi) {
            lo = shape.excluded.narrowStart(exLo, exHi, exPos, b);
            hi = shape.excluded.narrowEnd(lo, exHi, exPos, b);
            pos = lo < hi ? exPos + 1 : 0;
            if (lo == hi) {
                lo = hi = 0; // a canonical "no name matches", so that such keys reach equal states
            }
        }
        int nextMode = r & Utf8StringLexer.MODE_MASK;
        if (nextCount == count && nextMode == mode && lo == exLo && hi == exHi && pos == exPos) {
            out.add(self); // the common case inside long text: nothing changed, nothing allocated
        } else {
            out.add(self.replaceHead(new StringFrame(shape, nextCount, nextMode, lo, hi, pos)));
        }
    }
}
