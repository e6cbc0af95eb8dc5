package io.phxfs.serving.guided;

/** A string value whose content matches a {@code pattern} ({@link PatternFrame}). */
final class PatternShape implements ValueShape {
    private final ByteLanguage content;
    private final String pattern;

    PatternShape(ByteLanguage content, String pattern) {
        this.content = content;
        this.pattern = pattern;
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        if (b == '"') {
            out.add(below.push(new PatternFrame(content, content.start())));
        }
    }

    @Override
    public String toString() {
        return "string(/" + pattern + "/)";
    }
}
