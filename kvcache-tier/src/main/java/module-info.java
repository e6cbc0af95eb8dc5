/**
 * An LMCache-style KV-cache tier over Phoenix: prefill results of earlier requests kept in host
 * memory, on local disk and in Redis, found again by chained SHA-256 prefix hashes of the prompt.
 * Start at {@link io.phxfs.kvcache.KvCacheEngine}.
 */
module io.phxfs.kvcache {
    requires transitive io.phxfs.core;
    requires com.fasterxml.jackson.databind;
    requires com.fasterxml.jackson.dataformat.yaml;
    requires lettuce.core;
    requires io.netty.buffer;

    exports io.phxfs.kvcache;
}
