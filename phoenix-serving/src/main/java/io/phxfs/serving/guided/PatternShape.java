package io.phxfs.serving.guided;

/** A string value whose content is of a regular language: a {@code pattern}, a regular {@code format} ({@link PatternFrame}). */
final class PatternShape implements ValueShape {
    private final ByteLanguage content;
    private final int maxChars;
    private final String what;

    /**
     * @param content the content's language (the minimum length intersected into it)
     * @param maxChars the most characters, {@link StringShape#UNBOUNDED} for no bound
     * @param what the pattern or format, for debugging
     */
    PatternShape(ByteLanguage content, int maxChars, String what) {
        this.content = content;
        this.maxChars = maxChars;
        this.what = what;
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        if (b == '"' && (maxChars == StringShape.UNBOUNDED || content.minChars(content.start()) <= maxChars)) {
            out.add(below.push(new PatternFrame(content, content.start(), 0, maxChars)));
        }
    }

    @Override
    public String toString() {
        return "string(" + what + (maxChars == StringShape.UNBOUNDED ? "" : ", at most " + maxChars) + ")";
    }
}
