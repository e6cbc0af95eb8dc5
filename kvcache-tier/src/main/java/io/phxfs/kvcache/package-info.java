/**
 * KV-cache tiers for Java serving: {@link io.phxfs.kvcache.KvCacheEngine} stores, looks up and
 * retrieves the KV cache of token prefixes in chunks, through a memory pool, a local-disk tier
 * and a Redis tier.
 */
package io.phxfs.kvcache;
