package io.phxfs.safetensors;

/**
 * Told how many of the load's bytes are in place: first with what is there before the first
 * read (0, or the tensor bytes of a host mapping, which is complete once made), then as reads
 * complete, finally with {@code done == total}. A load with nothing to read (all of it mapped)
 * makes one call with {@code done == total}; only a load of no bytes at all reports (0, 0).
 * Calls come one at a time, from the thread that waits for the reads (for an {@code s3://}
 * model, from the threads that download it), with {@code done} never decreasing.
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
