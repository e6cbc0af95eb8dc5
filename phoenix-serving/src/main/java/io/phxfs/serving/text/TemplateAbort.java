package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.CollectionTooBigException;

/**
 * Ends a render at once, as a Python exception ends Jinja2's. jinjava records most exceptions
 * and renders on; the collection-size limit is the one failure it lets unwind the whole render,
 * so this extends it, carrying the message {@link ChatTemplate} reports.
 */
final class TemplateAbort extends CollectionTooBigException {
    private static final long serialVersionUID = 1L;

    private final String message;
    private final boolean raised;

    /**
     * @param message what failed
     * @param raised true for the template's own raise_exception, whose message is reported verbatim
     */
    TemplateAbort(String message, boolean raised) {
        super(0, 0);
        this.message = message;
        this.raised = raised;
        RenderState state = RenderState.current();
        if (state != null) {
            state.fail(this);
        }
    }

    @Override
    public String getMessage() {
        return message;
    }

    boolean raised() {
        return raised;
    }
}
