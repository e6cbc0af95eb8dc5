package io.phxfs.core;

import java.util.Arrays;

/** The per-request outcome of an {@link IoBatch} run: bytes moved or a negative errno each. */
public final class BatchResult {
    private final boolean write;
    /** Per-request direction of a batch of reads and writes; null when all go one way. */
    private final boolean[] writes;
    private final long[] results;
    /** Descriptions of failed requests only, indexed like {@link #results}; null where it succeeded. */
    private final String[] failures;
    private final int failed;
    /** phxfs_batch_times, for a submitted batch once it completed; 0 where not known. Set before the result is published. */
    private long queuedNanos;
    private long startedNanos;
    private long finishedNanos;

    BatchResult(boolean write, long[] results, String[] failures) {
        this(write, results, failures, null);
    }

    BatchResult(boolean write, long[] results, String[] failures, boolean[] writes) {
        this.write = write;
        this.writes = writes;
        this.results = results;
        this.failures = failures;
        int f = 0;
        for (long r : results) {
            if (r < 0) {
                f++;
            }
        }
        this.failed = f;
    }

    void setTimes(long queued, long started, long finished) {
        this.queuedNanos = queued;
        this.startedNanos = started;
        this.finishedNanos = finished;
    }

    /**
     * When libphoenix queued this batch, on the clock of {@link System#nanoTime()} (Linux's
     * CLOCK_MONOTONIC); with {@link #startedNanos()} and {@link #finishedNanos()} it tells a
     * batch's own transfer time from the time spent around it (hand-offs, wake-ups).
     *
     * @return nanoseconds, or 0 when not known (a batch run with {@link IoBatch#run()} reports none)
     */
    public long queuedNanos() {
        return queuedNanos;
    }

    /**
     * When a libphoenix thread took the batch's first task, on {@link System#nanoTime()}'s clock.
     *
     * @return nanoseconds, or 0 when not known or when the batch had no work
     */
    public long startedNanos() {
        return startedNanos;
    }

    /**
     * When the batch's last task ended, before its completion was handed to any waiter, on
     * {@link System#nanoTime()}'s clock.
     *
     * @return nanoseconds, or 0 when not known
     */
    public long finishedNanos() {
        return finishedNanos;
    }

    /**
     * Number of requests.
     *
     * @return the number of requests in the batch
     */
    public int size() {
        return results.length;
    }

    /**
     * Bytes moved by request {@code i} (short only at end of file for reads), or a negative errno.
     *
     * @param i the request's index, from 0 to {@link #size()} - 1
     * @return the request's byte count, or a negative errno when it failed
     */
    public long result(int i) {
        return results[i];
    }

    /**
     * Number of requests that failed.
     *
     * @return the count of requests whose result is negative
     */
    public int failed() {
        return failed;
    }

    /**
     * True when every request of the batch was a write.
     *
     * @return true when all requests were writes
     */
    public boolean isWrite() {
        return write;
    }

    /**
     * True when request {@code i} was a write.
     *
     * @param i the request's index, from 0 to {@link #size()} - 1
     * @return true when request {@code i} wrote to its file
     */
    public boolean isWrite(int i) {
        return writes != null ? writes[i] : write;
    }

    /**
     * Sum of the bytes moved by the requests that succeeded.
     *
     * @return the sum of the positive results
     */
    public long totalBytes() {
        long t = 0;
        for (long r : results) {
            if (r > 0) {
                t += r;
            }
        }
        return t;
    }

    /**
     * Throws the first failed request as a {@link PhoenixException} (with the count of the
     * others); returns this result when every request succeeded.
     *
     * @return this result, when no request failed
     * @throws PhoenixException for the first failed request, when any failed
     */
    public BatchResult throwIfFailed() {
        if (failed == 0) {
            return this;
        }
        for (int i = 0; i < results.length; i++) {
            if (results[i] < 0) {
                String what = "batch request " + i + " of " + results.length + ": "
                        + (failures != null && failures[i] != null ? failures[i] : "failed")
                        + (failed > 1 ? " (and " + (failed - 1) + " more failed)" : "");
                throw new PhoenixException(what, (int) -results[i]);
            }
        }
        throw new AssertionError("failed count without a failed request");
    }

    @Override
    public String toString() {
        return "BatchResult[" + (writes != null ? "read and write" : write ? "write" : "read") + ", " + results.length + " requests, " + failed
                + " failed, " + totalBytes() + " bytes" + (results.length <= 16 ? ", " + Arrays.toString(results) : "")
                + "]";
    }
}
