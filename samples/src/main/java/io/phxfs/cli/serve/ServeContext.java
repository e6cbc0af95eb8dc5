package io.phxfs.cli.serve;

import io.phxfs.serving.engine.GenerationEngine;
import java.io.PrintWriter;

/**
 * What the endpoints share.
 *
 * @param engine the generation engine
 * @param servedName the name clients give as {@code model}
 * @param log where errors are written (stderr)
 * @param policy the body limit and the server-wide cache salt
 */
record ServeContext(GenerationEngine engine, String servedName, PrintWriter log, HttpPolicy policy) {
    /** Logs an error the client saw as a 500 (or an error event), with its stack. */
    void logError(String what, Throwable t) {
        synchronized (log) {
            log.println("phoenix serve: " + what + ": " + StreamBridge.message(t));
            t.printStackTrace(log);
            log.flush();
        }
    }
}
