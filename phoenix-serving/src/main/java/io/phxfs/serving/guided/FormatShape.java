package io.phxfs.serving.guided;

/** A string value of a {@link StringFormat} ({@code "format": "date"}, ...). */
final class FormatShape implements ValueShape {
    private final StringFormat format;

    FormatShape(StringFormat format) {
        this.format = format;
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        if (b == '"') {
            out.add(below.push(new FormatFrame(format, StringFormat.START)));
        }
    }

    @Override
    public String toString() {
        return "string(" + format + ")";
    }
}
