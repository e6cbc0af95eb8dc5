package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import java.time.Clock;

/**
 * What one render keeps besides the template's variables: the clock strftime_now reads and the
 * first failure. jinjava swallows some exceptions on their way out (a macro call wraps them once
 * more than its resolver looks), so every {@link TemplateAbort} also lands here, and the render
 * reports the first one, the one Python would have raised.
 */
final class RenderState {
    /** A variable name no template can spell. */
    static final String KEY = "\u0000render-state";

    private final Clock clock;
    private TemplateAbort failure;

    RenderState(Clock clock) {
        this.clock = clock;
    }

    /** The state of the render on this thread, or null outside a render. */
    static RenderState current() {
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        return interpreter == null ? null : (RenderState) interpreter.getContext().get(KEY);
    }

    Clock clock() {
        return clock;
    }

    void fail(TemplateAbort abort) {
        if (failure == null) {
            failure = abort;
        }
    }

    TemplateAbort failure() {
        return failure;
    }
}
