package io.phxfs.cli.serve;

import io.phxfs.serving.engine.GenerationEngine;
import io.phxfs.serving.engine.GenerationListener;
import io.phxfs.serving.reasoning.ReasoningParser;
import io.phxfs.serving.tools.ToolCallParser;
import java.io.PrintWriter;
import java.util.function.UnaryOperator;

/**
 * What the endpoints share.
 *
 * @param engine the generation engine
 * @param servedName the name clients give as {@code model}
 * @param log where errors are written (stderr)
 * @param policy the body limit and the server-wide cache salt
 * @param toolParser the parser of tool calls for {@code tool_choice: "auto"}
 *        ({@code --enable-auto-tool-choice --tool-call-parser}), or null when auto tool choice is off
 * @param reasoningParser the parser that splits a chat's reasoning from its content
 *        ({@code --reasoning-parser}), or null when the text is returned as it is
 * @param listenerTap wraps each request's listener before the engine gets it: the identity but
 *        in tests, which put scripted text in place of a real generation's tokens (the engine's
 *        token count, finish and usage stay real) to drive the tool-call responses end to end
 */
record ServeContext(GenerationEngine engine, String servedName, PrintWriter log, HttpPolicy policy,
                    ToolCallParser toolParser, ReasoningParser reasoningParser,
                    UnaryOperator<GenerationListener> listenerTap) {
    /** Logs an error the client saw as a 500 (or an error event), with its stack. */
    void logError(String what, Throwable t) {
        synchronized (log) {
            log.println("phoenix serve: " + what + ": " + StreamBridge.message(t));
            t.printStackTrace(log);
            log.flush();
        }
    }
}
