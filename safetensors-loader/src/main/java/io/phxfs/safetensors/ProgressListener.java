package io.phxfs.safetensors;

/**
 * Told how many of the plan's bytes have arrived: once with 0 before the first read, then as
 * parts complete, finally with {@code done == total}. Calls come from I/O completion threads,
 * one at a time, with {@code done} never decreasing.
 */
@FunctionalInterface
public interface ProgressListener {
    /**
     * One progress report.
     *
     * @param done  bytes of the plan read so far
     * @param total bytes the plan reads in all
     */
    void onProgress(long done, long total);
}
