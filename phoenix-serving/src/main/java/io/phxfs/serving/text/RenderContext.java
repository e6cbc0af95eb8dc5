package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.Context;
import java.util.Map;

/**
 * The top scope of one render. Its parent is jinjava's global context (the registered filters,
 * tests, functions and tags), shared by all renders instead of copied for each (a copy
 * re-registers every default filter). jinjava records every expression a render resolves and
 * pushes the record up to the root, which would make the shared parent a concurrently
 * modified, ever growing set; nothing here reads those records, so they stop at this scope.
 */
final class RenderContext extends Context {
    RenderContext(Context global, Map<String, ?> bindings) {
        super(global, bindings, null);
    }

    @Override
    public void addResolvedExpression(String expression) {
        // not kept: see the class comment
    }

    @Override
    public void addResolvedValue(String value) {
        // not kept
    }

    @Override
    public void addResolvedFunction(String function) {
        // not kept
    }
}
