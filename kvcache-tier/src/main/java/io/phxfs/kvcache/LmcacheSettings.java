package io.phxfs.kvcache;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * LMCache's settings that this tier does not implement. An LMCache configuration file carries
 * them (its examples write {@code remote_serde: "naive"} beside the sizes): each is accepted at
 * the value that means what this tier does anyway, and otherwise refused naming it and what it
 * would have changed, never ignored. A key that is no setting of LMCache's either is an unknown
 * setting (a misspelling, most likely).
 */
final class LmcacheSettings {
    private LmcacheSettings() {
    }

    /** Accepted at these values (compared as lower-case text): what this tier does anyway. */
    private static final Map<String, Set<String>> SAME_AS_HERE = Map.ofEntries(
            Map.entry("remote_serde", Set.of("naive")),
            Map.entry("use_layerwise", Set.of("false", "0")),
            Map.entry("enable_blending", Set.of("false", "0")),
            Map.entry("save_decode_cache", Set.of("false", "0")),
            Map.entry("local_cpu_use_hugepages", Set.of("false", "0")),
            Map.entry("enable_p2p", Set.of("false", "0")),
            Map.entry("enable_pd", Set.of("false", "0")),
            Map.entry("enable_controller", Set.of("false", "0")),
            Map.entry("enable_async_loading", Set.of("false", "0")),
            Map.entry("cache_policy", Set.of("lru")),
            Map.entry("min_retrieve_tokens", Set.of("0")),
            Map.entry("reserve_local_cpu_size", Set.of("0", "0.0")));

    /** What the non-default value of a setting would do, for the refusal. */
    private static final Map<String, String> WHAT = Map.ofEntries(
            Map.entry("remote_serde", "serializes or compresses remote chunks (cachegen, torch, ...); here they go"
                    + " as they are, naive"),
            Map.entry("use_layerwise", "stores and retrieves layer by layer"),
            Map.entry("enable_blending", "blends non-prefix chunks (CacheBlend)"),
            Map.entry("save_decode_cache", "stores decoded tokens' KV; here the caller stores what it passes"),
            Map.entry("local_cpu_use_hugepages", "backs the memory tier with huge pages"),
            Map.entry("cache_policy", "chooses another eviction policy; here it is LRU"),
            Map.entry("extra_config", "sets backend options; only use_odirect: true (what the disk tier does where"
                    + " the file system allows) is accepted"),
            Map.entry("local_disk_path_sharding", "puts each GPU's chunks in a directory of its own; give each"
                    + " process its own local_disk here"),
            Map.entry("gds_path", "runs LMCache's GPUDirect Storage backend; here the disk tier (local_disk) reads"
                    + " through Phoenix"),
            Map.entry("blocking_timeout_secs", "bounds LMCache's blocking calls; here remote_timeout_ms bounds"
                    + " Redis's"),
            Map.entry("remote_storage_plugins", "loads storage plugins"),
            Map.entry("storage_plugins", "loads storage plugins"));

    /** LMCache's setting names (lmcache/v1/config.py, its aliases and v0's), beyond those this tier implements. */
    private static final Set<String> LMCACHE = Set.of(
            "local_cpu_use_hugepages", "reserve_local_cpu_size", "local_disk_path_sharding", "remote_serde",
            "use_layerwise", "save_decode_cache", "pre_caching_hash_algorithm", "enable_blending",
            "blend_recompute_ratios", "blend_thresholds", "blend_check_layers", "blend_min_tokens",
            "blend_special_str", "retrieve_locations", "store_location", "enable_p2p", "p2p_host", "p2p_init_ports",
            "p2p_lookup_ports", "mp_host", "mp_port", "enable_controller", "lmcache_instance_id",
            "controller_pull_url", "controller_reply_url", "lmcache_worker_ports", "lmcache_worker_ids",
            "lmcache_worker_heartbeat_delay_time", "lmcache_worker_heartbeat_time", "enable_pd", "pd_role",
            "pd_buffer_size", "pd_buffer_device", "pd_peer_host", "pd_peer_init_port", "pd_peer_alloc_port",
            "pd_peer_query_port", "pd_proxy_host", "pd_proxy_port", "transfer_channel", "nixl_backends",
            "nixl_buffer_size", "nixl_buffer_device", "gds_path", "gds_path_sharding", "gds_buffer_size", "use_gds",
            "gds_backend", "audit_actual_remote_url", "internal_api_server_host", "extra_config",
            "blocking_timeout_secs", "external_lookup_client", "py_enable_gc", "cache_policy", "numa_mode",
            "enable_async_loading", "internal_api_server_enabled", "internal_api_server_port_start",
            "priority_limit", "runtime_plugin_locations", "storage_plugins", "remote_storage_plugins",
            "lookup_timeout_ms", "min_retrieve_tokens", "enable_scheduler_bypass_lookup",
            "enable_lazy_memory_allocator", "enable_kv_events", "pin_timeout_sec", "pin_check_interval_sec",
            "remote_config_url", "app_id", "enable_hidden_state_cache", "max_hidden_state_cpu_size",
            // aliases and deprecated names
            "enable_xpyd", "nixl_peer_host", "nixl_peer_init_port", "nixl_peer_alloc_port", "nixl_proxy_host",
            "nixl_proxy_port", "nixl_role", "nixl_peer_port", "controller_url", "lmcache_worker_port",
            "plugin_locations", "external_backends",
            // v0
            "local_device", "pipelined_backend", "max_local_cache_size");

    /** Whether {@code key} is one of LMCache's settings (that this tier does not implement). */
    static boolean isLmcacheSetting(String key) {
        return LMCACHE.contains(key);
    }

    /**
     * Accepts an LMCache setting at the value that changes nothing here; throws for any other
     * value, for any other LMCache setting and for a key no one knows.
     *
     * @param key   the setting's name
     * @param shown the name as the user wrote it (an {@code LMCACHE_*} variable)
     * @param v     its value
     * @param known the settings this tier implements, for the message
     */
    static void check(String key, String shown, JsonNode v, Set<String> known) {
        if (!LMCACHE.contains(key)) {
            throw new IllegalArgumentException("unknown setting '" + shown + "'; known: " + known);
        }
        String text = v.isNull() ? null : v.asText().strip().toLowerCase(Locale.ROOT);
        Set<String> same = SAME_AS_HERE.get(key);
        if (v.isNull() || same != null && same.contains(text)) {
            return;
        }
        if (key.equals("extra_config") && v.isObject() && v.size() == 1 && v.has("use_odirect")
                && v.get("use_odirect").asText().equalsIgnoreCase("true")) {
            return;
        }
        String what = WHAT.get(key);
        throw new IllegalArgumentException("'" + shown + "' is an LMCache setting this tier does not implement"
                + (what == null ? "" : " (it " + what + ")")
                + (same == null ? "" : "; only " + String.join(" or ", new java.util.TreeSet<>(same)) + " is accepted")
                + "; remove it");
    }
}
