package io.phxfs.cli;

import io.phxfs.safetensors.ProgressListener;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * A progress bar on stderr that appears only when the work outlasts a delay (1 s): short
 * loads print nothing, long ones redraw the bar a few times a second and end with a newline.
 */
final class ProgressBar implements ProgressListener, AutoCloseable {
    private static final int WIDTH = 30;

    private final PrintWriter err;
    private final String label;
    private final long delayNanos;
    private final long start = System.nanoTime();
    private final Thread painter;
    private volatile long done;
    private volatile long total;
    private volatile boolean closed;
    private boolean drawn;

    ProgressBar(PrintWriter err, String label, long delayMillis) {
        this.err = err;
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

    private synchronized void draw(boolean last) {
        if (closed && !last) {
            return;
        }
        long t = total;
        long d = Math.min(done, t);
        double secs = (System.nanoTime() - start) / 1e9;
        if (t == 0) { // nothing to read yet: memory is being allocated (a cold 100 GB host buffer takes seconds)
            err.print(String.format(Locale.ROOT, "\r%s [%s] allocating memory (%.1f s)", label, "-".repeat(WIDTH), secs));
        } else {
            int filled = (int) (WIDTH * d / t);
            String bar = "#".repeat(filled) + "-".repeat(WIDTH - filled);
            err.print(String.format(Locale.ROOT, "\r%s [%s] %3d%% %8.2f / %.2f GB %7.2f GB/s", label, bar,
                    d * 100 / t, d / 1e9, t / 1e9, secs > 0 ? d / secs / 1e9 : 0.0));
        }
        err.flush();
        drawn = true;
    }

    /** True once the bar has been shown. */
    synchronized boolean wasDrawn() {
        return drawn;
    }

    @Override
    public void close() {
        closed = true;
        painter.interrupt();
        try {
            painter.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            if (drawn) {
                draw(true);
                err.println();
                err.flush();
            }
        }
    }
}
