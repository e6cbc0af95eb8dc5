package io.phxfs.cli;

import java.io.PrintWriter;

/** Progress lines on stderr, so stdout stays clean for tables and JSON. */
final class Progress {
    private final PrintWriter err;
    private final boolean quiet;
    private final long start = System.nanoTime();

    Progress(PrintWriter err, boolean quiet) {
        this.err = err;
        this.quiet = quiet;
    }

    void step(String fmt, Object... args) {
        if (!quiet) {
            err.printf("[%6.1fs] %s%n", (System.nanoTime() - start) / 1e9, String.format(fmt, args));
            err.flush();
        }
    }
}
