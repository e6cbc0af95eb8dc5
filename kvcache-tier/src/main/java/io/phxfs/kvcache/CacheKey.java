package io.phxfs.kvcache;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The key of one stored chunk, with LMCache's string form
 * {@code model@worldSize@workerId@chunkHash@dtype[@tag%value...]}. Two keys are equal when their
 * strings are; the string is built once (tiers index by it).
 */
public final class CacheKey {
    private final String model;
    private final int worldSize;
    private final int workerId;
    private final String chunkHash;
    private final String dtype;
    private final Map<String, String> tags;
    private final String string;

    /**
     * Checks the fields and freezes the tags.
     *
     * @param model     the model's name; may not contain {@code @}
     * @param worldSize tensor-parallel world size
     * @param workerId  this worker's rank
     * @param chunkHash the chunk's chained prefix hash, lower-case hex
     * @param dtype     the KV dtype's LMCache name ({@code bfloat16}, ...)
     * @param tags      extra tags in order (may be null); names and values may contain neither {@code @} nor {@code %}
     * @throws IllegalArgumentException when a field holds a separator or is empty
     */
    public CacheKey(String model, int worldSize, int workerId, String chunkHash, String dtype, Map<String, String> tags) {
        check("model", model, false);
        check("chunkHash", chunkHash, false);
        check("dtype", dtype, false);
        if (worldSize <= 0 || workerId < 0 || workerId >= worldSize) {
            throw new IllegalArgumentException("CacheKey: workerId " + workerId + " outside world size " + worldSize);
        }
        Map<String, String> t = new LinkedHashMap<>();
        if (tags != null) {
            tags.forEach((k, v) -> {
                check("tag name", k, true);
                check("tag value", v, true);
                t.put(k, v);
            });
        }
        this.model = model;
        this.worldSize = worldSize;
        this.workerId = workerId;
        this.chunkHash = chunkHash;
        this.dtype = dtype;
        this.tags = t.isEmpty() ? Map.of() : Collections.unmodifiableMap(t);
        this.string = build();
    }

    /**
     * The model's name.
     *
     * @return the model
     */
    public String model() {
        return model;
    }

    /**
     * The tensor-parallel world size.
     *
     * @return the world size
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * This worker's rank.
     *
     * @return the worker id
     */
    public int workerId() {
        return workerId;
    }

    /**
     * The chunk's chained prefix hash, lower-case hex.
     *
     * @return the hash
     */
    public String chunkHash() {
        return chunkHash;
    }

    /**
     * The dtype's LMCache name.
     *
     * @return the dtype
     */
    public String dtype() {
        return dtype;
    }

    /**
     * The extra tags, in order.
     *
     * @return an unmodifiable map
     */
    public Map<String, String> tags() {
        return tags;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CacheKey k && k.string.equals(string);
    }

    @Override
    public int hashCode() {
        return string.hashCode();
    }

    private static void check(String what, String s, boolean tag) {
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException("CacheKey: " + what + " is empty");
        }
        if (s.indexOf('@') >= 0 || tag && s.indexOf('%') >= 0) {
            throw new IllegalArgumentException("CacheKey: " + what + " '" + s + "' contains a separator ('@'"
                    + (tag ? " or '%'" : "") + ")");
        }
    }

    /**
     * LMCache's string form.
     *
     * @return {@code model@worldSize@workerId@chunkHash@dtype[@tag%value...]}
     */
    @Override
    public String toString() {
        return string;
    }

    private String build() {
        StringBuilder sb = new StringBuilder(model.length() + chunkHash.length() + 32);
        sb.append(model).append('@').append(worldSize).append('@').append(workerId).append('@')
                .append(chunkHash).append('@').append(dtype);
        tags.forEach((k, v) -> sb.append('@').append(k).append('%').append(v));
        return sb.toString();
    }

    /**
     * Reads the string form back.
     *
     * @param s a key string
     * @return the key
     * @throws IllegalArgumentException naming what is wrong with {@code s}
     */
    public static CacheKey parse(String s) {
        List<String> parts = new ArrayList<>(List.of(s.split("@", -1)));
        if (parts.size() < 5) {
            throw new IllegalArgumentException("not a cache key (model@world_size@worker_id@hash@dtype): '" + s + "'");
        }
        Map<String, String> tags = new LinkedHashMap<>();
        for (String tag : parts.subList(5, parts.size())) {
            int p = tag.indexOf('%');
            if (p <= 0) {
                throw new IllegalArgumentException("cache key '" + s + "': tag '" + tag + "' is not name%value");
            }
            tags.put(tag.substring(0, p), tag.substring(p + 1));
        }
        try {
            return new CacheKey(parts.get(0), Integer.parseInt(parts.get(1)), Integer.parseInt(parts.get(2)),
                    parts.get(3), parts.get(4), tags);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("cache key '" + s + "': world size and worker id must be integers", e);
        }
    }
}
