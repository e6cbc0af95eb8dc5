package io.phxfs.serving.engine;

import io.phxfs.kvcache.KvCacheConfig;
import java.nio.file.Path;
import java.util.Objects;

/**
 * What a {@link GenerationEngine} serves and how much it takes on.
 *
 * @param modelDir a Hugging Face checkpoint directory: config.json, safetensors, tokenizer.json
 * @param device the accelerator to compute on, or null for the CPU
 * @param kvCache the prefix cache's tiers (LMCache's keys), or null for none
 * @param maxRunning requests decoded together in one batch, at least 1
 * @param maxWaiting requests queued beyond those, at least 0; past it submit refuses
 * @param observer receives timings for metrics
 * @param idlePrefixBytes bytes of prefix KV kept resident (on the GPU, or in host memory) after
 *        the requests that used it end, for the next request with that prefix; 0 for none,
 *        {@link #AUTO} for half of what a full batch at full context needs, at most 4 GiB
 */
public record EngineConfig(Path modelDir, Integer device, KvCacheConfig kvCache, int maxRunning, int maxWaiting,
                           EngineObserver observer, long idlePrefixBytes) {
    /** {@link #idlePrefixBytes} chosen from the model and the batch. */
    public static final long AUTO = -1;
    /** Requests decoded together by default. */
    public static final int DEFAULT_MAX_RUNNING = 8;
    /** Requests queued by default. */
    public static final int DEFAULT_MAX_WAITING = 64;

    /**
     * Checks the fields.
     *
     * @throws IllegalArgumentException for limits out of range
     */
    public EngineConfig {
        Objects.requireNonNull(modelDir, "modelDir");
        if (maxRunning < 1) {
            throw new IllegalArgumentException("max running requests must be at least 1, was " + maxRunning);
        }
        if (maxWaiting < 0) {
            throw new IllegalArgumentException("max waiting requests must be at least 0, was " + maxWaiting);
        }
        if (idlePrefixBytes < AUTO) {
            throw new IllegalArgumentException("idle prefix bytes must be at least 0, was " + idlePrefixBytes);
        }
        observer = observer == null ? EngineObserver.NONE : observer;
    }

    /**
     * The defaults for a checkpoint: the CPU, no prefix cache, 8 running and 64 waiting.
     *
     * @param modelDir the checkpoint directory
     * @return the configuration
     */
    public static EngineConfig of(Path modelDir) {
        return new EngineConfig(modelDir, null, null, DEFAULT_MAX_RUNNING, DEFAULT_MAX_WAITING, EngineObserver.NONE, AUTO);
    }

    /**
     * This configuration with a prefix cache.
     *
     * @param kv the tiers, or null for none
     * @return a new configuration
     */
    public EngineConfig withKvCache(KvCacheConfig kv) {
        return new EngineConfig(modelDir, device, kv, maxRunning, maxWaiting, observer, idlePrefixBytes);
    }

    /**
     * This configuration with other limits.
     *
     * @param running requests decoded together
     * @param waiting requests queued
     * @return a new configuration
     */
    public EngineConfig withLimits(int running, int waiting) {
        return new EngineConfig(modelDir, device, kvCache, running, waiting, observer, idlePrefixBytes);
    }

    /**
     * This configuration with an observer.
     *
     * @param o the observer
     * @return a new configuration
     */
    public EngineConfig withObserver(EngineObserver o) {
        return new EngineConfig(modelDir, device, kvCache, maxRunning, maxWaiting, o, idlePrefixBytes);
    }

    /**
     * This configuration on a device.
     *
     * @param d the device number, or null for the CPU
     * @return a new configuration
     */
    public EngineConfig withDevice(Integer d) {
        return new EngineConfig(modelDir, d, kvCache, maxRunning, maxWaiting, observer, idlePrefixBytes);
    }

    /**
     * This configuration with another budget for idle prefix blocks.
     *
     * @param bytes bytes, 0 for none, or {@link #AUTO}
     * @return a new configuration
     */
    public EngineConfig withIdlePrefixBytes(long bytes) {
        return new EngineConfig(modelDir, device, kvCache, maxRunning, maxWaiting, observer, bytes);
    }
}
