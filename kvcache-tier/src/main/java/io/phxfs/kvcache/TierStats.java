package io.phxfs.kvcache;

/**
 * A tier's counters at one moment.
 *
 * @param tier          the tier's name
 * @param hits          verified gets
 * @param misses        gets that found nothing, or nothing usable
 * @param bytesRead     payload bytes returned by hits
 * @param bytesWritten  payload bytes stored
 * @param puts          chunks stored
 * @param failedPuts    stores that failed or were declined (full, I/O error, unreachable)
 * @param entries       chunks held now; -1 where the tier cannot tell cheaply (Redis)
 * @param bytesUsed     bytes held now (for the disk tier, file sizes); -1 where unknown (Redis)
 * @param capacityBytes the byte cap; 0 where the tier has none of its own (Redis)
 * @param evictions     chunks evicted to make room
 * @param corrupt       entries found damaged, torn or foreign, and dropped
 * @param errors        I/O or connection errors met (each also a miss or failed put)
 */
public record TierStats(String tier, long hits, long misses, long bytesRead, long bytesWritten, long puts,
                        long failedPuts, long entries, long bytesUsed, long capacityBytes, long evictions,
                        long corrupt, long errors) {
    /**
     * Hits over lookups, 0 when none.
     *
     * @return the hit ratio, 0.0 to 1.0
     */
    public double hitRatio() {
        long n = hits + misses;
        return n == 0 ? 0 : (double) hits / n;
    }

    /**
     * Bytes used over the cap.
     *
     * @return occupancy, 0.0 to 1.0 (more only while an eviction catches up)
     */
    public double occupancy() {
        return capacityBytes == 0 ? 0 : (double) bytesUsed / capacityBytes;
    }
}
