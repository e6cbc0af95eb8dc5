package io.phxfs.kvcache;

import java.util.List;

/**
 * The engine's counters at one moment.
 *
 * @param tiers              each tier's counters, top tier first
 * @param queueDepth         chunks waiting in the write-behind queue
 * @param queueCapacity      the queue's bound
 * @param storeRequests      store calls
 * @param retrieveRequests   retrieve calls
 * @param lookupRequests     lookup calls
 * @param requestedTokens    tokens asked for by retrieves
 * @param retrievedTokens    tokens retrieves filled
 * @param promotions         chunks copied up into the memory tier after a hit below it
 * @param writeBehindFailures lower-tier writes of the write-behind that failed
 */
public record KvMetrics(List<TierStats> tiers, int queueDepth, int queueCapacity, long storeRequests,
                        long retrieveRequests, long lookupRequests, long requestedTokens, long retrievedTokens,
                        long promotions, long writeBehindFailures) {
    /**
     * The counters of one tier.
     *
     * @param name the tier's name ({@code memory}, {@code disk}, {@code redis})
     * @return its counters, or null when the engine has no such tier
     */
    public TierStats tier(String name) {
        return tiers.stream().filter(t -> t.tier().equals(name)).findFirst().orElse(null);
    }

    /**
     * Tokens retrieved over tokens asked for.
     *
     * @return the token hit ratio, 0.0 to 1.0
     */
    public double tokenHitRatio() {
        return requestedTokens == 0 ? 0 : (double) retrievedTokens / requestedTokens;
    }
}
