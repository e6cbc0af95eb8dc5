package io.phxfs.cli;

import io.phxfs.safetensors.ProgressListener;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * A progress bar on stderr that appears only when the work outlasts a delay (1 s): short
 * loads print nothing, long ones redraw the bar a few times a second and end with a newline.
 * When stderr is not a terminal (a log file, a pipe, CI) there are no carriage-return
 * frames: one plain line every few seconds instead, each ending in a newline.
 */
final class ProgressBar implements ProgressListener, AutoCloseable {
    private static final int WIDTH = 30;

    private final PrintWriter err;
    private final String label;
    private final long delayNanos;
    private final long start = System.nanoTime();
    private final boolean terminal;
    private final Thread painter;
    private long lastLineNanos;
    private volatile long done;
    private volatile long total;
    private volatile boolean closed;
    private boolean drawn;

    ProgressBar(PrintWriter err, String label, long delayMillis) {
        this(err, label, delayMillis, stderrIsTerminal());
    }

    ProgressBar(PrintWriter err, String label, long delayMillis, boolean terminal) {
        this.err = err;
        this.terminal = terminal;
        this.label = label;
        this.delayNanos = delayMillis * 1_000_000L;
        this.painter = Thread.ofPlatform().daemon(true).name("phoenix-progress").unstarted(this::paint);
        painter.start();
    }

    @Override
    public void onProgress(long done, long total) {
        this.total = total;
        this.done = done;
    }

    private void paint() {
        try {
            Thread.sleep(delayNanos / 1_000_000L);
            while (!closed) {
                draw(false);
                Thread.sleep(200);
            }
        } catch (InterruptedException e) {
            // closed: the last line is drawn by close()
        }
    }

    /** Linux: file descriptor 2 links to a pts or tty device when stderr is a terminal. */
    static boolean stderrIsTerminal() {
        try {
            String target = java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of("/proc/self/fd/2")).toString();
            return target.startsWith("/dev/pts/") || target.startsWith("/dev/tty");
        } catch (java.io.IOException | UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    private synchronized void draw(boolean last) {
        if (closed && !last) {
            return;
        }
        long now = System.nanoTime();
        if (!terminal && !last && drawn && now - lastLineNanos < 5_000_000_000L) {
            return;
        }
        lastLineNanos = now;
        String cr = terminal ? "\r" : "";
        long t = total;
        long d = Math.min(done, t);
        double secs = (System.nanoTime() - start) / 1e9;
        if (t == 0) { // nothing to read yet: memory is being allocated (a cold 100 GB host buffer takes seconds)
            err.print(String.format(Locale.ROOT, "%s%s [%s] allocating memory (%.1f s)", cr, label, "-".repeat(WIDTH), secs));
        } else {
            int filled = (int) (WIDTH * d / t);
            String bar = "#".repeat(filled) + "-".repeat(WIDTH - filled);
            err.print(String.format(Locale.ROOT, "%s%s [%s] %3d%% %8.2f / %.2f GB %7.2f GB/s", cr, label, bar,
                    d * 100 / t, d / 1e9, t / 1e9, secs > 0 ? d / secs / 1e9 : 0.0));
        }
        if (!terminal && !last) {
            err.println();
        }
        err.flush();
        drawn = true;
    }

    /** True once the bar has been shown. */
    synchronized boolean wasDrawn() {
        return drawn;
    }

    /**
     * Draws the last line (when the bar was shown) and stops the painter without waiting for
     * it: {@link #draw} checks {@code closed} under this lock, so the painter prints nothing
     * after this, and joining it cost a thread wake-up and exit inside the timed load.
     * Later calls do nothing.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            if (drawn) {
                draw(true);
                err.println();
                err.flush();
            }
        }
        painter.interrupt();
    }
}
