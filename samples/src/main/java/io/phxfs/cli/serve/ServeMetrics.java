package io.phxfs.cli.serve;

import io.phxfs.kvcache.KvMetrics;
import io.phxfs.kvcache.TierStats;
import io.phxfs.serving.engine.EngineObserver;
import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.GenerationEngine;
import io.phxfs.serving.engine.Usage;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.ExpositionFormatWriter;
import io.prometheus.metrics.expositionformats.ExpositionFormats;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Optional;
import java.util.function.ToLongFunction;

/**
 * The server's Prometheus series, named after vLLM's under a {@code phoenix:} prefix, each with
 * the label {@code model_name}: latency histograms, token and request counters, the running and
 * waiting requests, and the KV tier's counters (label {@code tier}). Prometheus' Java client 1.x
 * accepts the colon (legal in metric names, and vLLM's convention); counters get {@code _total}.
 * Fed by the engine as an {@link EngineObserver}, on its thread: each call only adds to a
 * lock-free series.
 */
final class ServeMetrics implements EngineObserver {
    static final String PREFIX = "phoenix:";

    // vLLM's buckets, with finer ones below them for a small model on a CPU
    private static final double[] TTFT_BUCKETS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
        1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
    private static final double[] ITL_BUCKETS = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15,
        0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
    private static final double[] REQUEST_BUCKETS = {0.001, 0.005, 0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0,
        2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final ExpositionFormats formats = ExpositionFormats.init();
    private final String model;

    private final DistributionDataPoint ttft;
    private final DistributionDataPoint itl;
    private final DistributionDataPoint e2e;
    private final DistributionDataPoint queue;
    private final DistributionDataPoint prefill;
    private final DistributionDataPoint decode;
    private final Counter success;
    private final io.prometheus.metrics.core.datapoints.CounterDataPoint promptTokens;
    private final io.prometheus.metrics.core.datapoints.CounterDataPoint generationTokens;
    private final io.prometheus.metrics.core.datapoints.CounterDataPoint prefixQueries;
    private final io.prometheus.metrics.core.datapoints.CounterDataPoint prefixHits;

    private volatile GenerationEngine engine;
    /** The tier's counters of the scrape under way, read once for all of its series. */
    private volatile KvMetrics tier;

    ServeMetrics(String model) {
        this.model = model;
        ttft = histogram("time_to_first_token_seconds", "Time from a request's arrival to its first token.",
                TTFT_BUCKETS);
        itl = histogram("inter_token_latency_seconds", "Time between a request's successive tokens.", ITL_BUCKETS);
        e2e = histogram("e2e_request_latency_seconds", "Time from a request's arrival to its end.", REQUEST_BUCKETS);
        queue = histogram("request_queue_time_seconds", "Time requests waited in the queue.", REQUEST_BUCKETS);
        prefill = histogram("request_prefill_time_seconds",
                "Time of a request's prefill, its prefix-cache retrieve included.", REQUEST_BUCKETS);
        decode = histogram("request_decode_time_seconds", "Time from a request's first token to its end.",
                REQUEST_BUCKETS);
        success = Counter.builder().name(PREFIX + "request_success")
                .help("Requests that ended, by finish reason (stop, length, cancelled).")
                .labelNames("model_name", "finished_reason").register(registry);
        for (FinishReason r : FinishReason.values()) {
            success.labelValues(model, r.wire()); // every reason shown from the start, at 0
        }
        promptTokens = counter("prompt_tokens", "Prompt tokens of the requests that ended.");
        generationTokens = counter("generation_tokens", "Tokens generated.");
        prefixQueries = counter("prefix_cache_queries", "Prompt tokens looked up in the prefix cache.");
        prefixHits = counter("prefix_cache_hits", "Prompt tokens found in the prefix cache.");
        GaugeWithCallback.builder().name(PREFIX + "num_requests_running").help("Requests being decoded.")
                .labelNames("model_name").callback(cb -> {
                    GenerationEngine e = engine;
                    cb.call(e == null ? 0 : e.running(), model);
                }).register(registry);
        GaugeWithCallback.builder().name(PREFIX + "num_requests_waiting").help("Requests waiting to be scheduled.")
                .labelNames("model_name").callback(cb -> {
                    GenerationEngine e = engine;
                    cb.call(e == null ? 0 : e.waiting(), model);
                }).register(registry);
    }

    private DistributionDataPoint histogram(String name, String help, double[] buckets) {
        return Histogram.builder().name(PREFIX + name).help(help).classicOnly().classicUpperBounds(buckets)
                .labelNames("model_name").register(registry).labelValues(model);
    }

    private io.prometheus.metrics.core.datapoints.CounterDataPoint counter(String name, String help) {
        return Counter.builder().name(PREFIX + name).help(help).labelNames("model_name").register(registry)
                .labelValues(model);
    }

    /**
     * The engine whose queue the gauges show, and whose KV tier, if it has one, gets its series.
     */
    void bind(GenerationEngine e) {
        this.engine = e;
        if (e.tierMetrics().isEmpty()) {
            return;
        }
        tierCounter("kv_tier_hits", "Chunk lookups the tier answered.", TierStats::hits);
        tierCounter("kv_tier_misses", "Chunk lookups the tier did not have.", TierStats::misses);
        tierCounter("kv_tier_read_bytes", "Bytes read from the tier.", TierStats::bytesRead);
        tierCounter("kv_tier_written_bytes", "Bytes written to the tier.", TierStats::bytesWritten);
        tierCounter("kv_tier_puts", "Chunks stored in the tier.", TierStats::puts);
        tierCounter("kv_tier_failed_puts", "Chunk stores the tier refused or failed.", TierStats::failedPuts);
        tierCounter("kv_tier_evictions", "Chunks evicted to stay within the tier's capacity.", TierStats::evictions);
        tierCounter("kv_tier_corrupt", "Chunks found corrupt (recomputed instead).", TierStats::corrupt);
        tierCounter("kv_tier_errors", "I/O or connection errors of the tier.", TierStats::errors);
        tierGauge("kv_tier_entries", "Chunks in the tier.", TierStats::entries);
        tierGauge("kv_tier_used_bytes", "Bytes the tier holds.", TierStats::bytesUsed);
        tierGauge("kv_tier_capacity_bytes", "The tier's capacity in bytes (0: unbounded).", TierStats::capacityBytes);
        engineGauge("kv_write_queue_depth", "Chunks waiting in the write-behind queue.", KvMetrics::queueDepth);
        engineGauge("kv_write_queue_capacity", "The write-behind queue's bound.", KvMetrics::queueCapacity);
        engineCounter("kv_store_requests", "Store calls to the KV cache.", KvMetrics::storeRequests);
        engineCounter("kv_retrieve_requests", "Retrieve calls to the KV cache.", KvMetrics::retrieveRequests);
        engineCounter("kv_lookup_requests", "Lookup calls to the KV cache.", KvMetrics::lookupRequests);
        engineCounter("kv_requested_tokens", "Tokens retrieves asked for.", KvMetrics::requestedTokens);
        engineCounter("kv_retrieved_tokens", "Tokens retrieves filled.", KvMetrics::retrievedTokens);
        engineCounter("kv_promotions", "Chunks copied up into the memory tier after a hit below it.",
                KvMetrics::promotions);
        engineCounter("kv_write_behind_failures", "Lower-tier writes of the write-behind that failed.",
                KvMetrics::writeBehindFailures);
    }

    private void tierCounter(String name, String help, ToLongFunction<TierStats> f) {
        CounterWithCallback.builder().name(PREFIX + name).help(help).labelNames("model_name", "tier").callback(cb -> {
            KvMetrics m = tier;
            if (m != null) {
                for (TierStats t : m.tiers()) {
                    cb.call(f.applyAsLong(t), model, t.tier());
                }
            }
        }).register(registry);
    }

    private void tierGauge(String name, String help, ToLongFunction<TierStats> f) {
        GaugeWithCallback.builder().name(PREFIX + name).help(help).labelNames("model_name", "tier").callback(cb -> {
            KvMetrics m = tier;
            if (m != null) {
                for (TierStats t : m.tiers()) {
                    cb.call(f.applyAsLong(t), model, t.tier());
                }
            }
        }).register(registry);
    }

    private void engineCounter(String name, String help, ToLongFunction<KvMetrics> f) {
        CounterWithCallback.builder().name(PREFIX + name).help(help).labelNames("model_name").callback(cb -> {
            KvMetrics m = tier;
            if (m != null) {
                cb.call(f.applyAsLong(m), model);
            }
        }).register(registry);
    }

    private void engineGauge(String name, String help, ToLongFunction<KvMetrics> f) {
        GaugeWithCallback.builder().name(PREFIX + name).help(help).labelNames("model_name").callback(cb -> {
            KvMetrics m = tier;
            if (m != null) {
                cb.call(f.applyAsLong(m), model);
            }
        }).register(registry);
    }

    /** A scrape in the format the {@code Accept} header asks for (Prometheus' text format by default). */
    record Scrape(String contentType, byte[] body) {
    }

    /**
     * Takes a snapshot of every series.
     *
     * @param accept the scraper's Accept header, or null
     */
    synchronized Scrape scrape(String accept) throws IOException {
        GenerationEngine e = engine;
        Optional<KvMetrics> m = e == null ? Optional.empty() : e.tierMetrics();
        tier = m.orElse(null);
        MetricSnapshots snapshots = registry.scrape();
        ExpositionFormatWriter w = formats.findWriter(accept);
        ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
        w.write(out, snapshots);
        return new Scrape(w.getContentType(), out.toByteArray());
    }

    @Override
    public void scheduled(double queueSeconds) {
        queue.observe(queueSeconds);
    }

    @Override
    public void prefixCache(int queriedTokens, int hitTokens) {
        prefixQueries.inc(queriedTokens);
        prefixHits.inc(hitTokens);
    }

    @Override
    public void firstToken(double ttftSeconds, double prefillSeconds) {
        ttft.observe(ttftSeconds);
        prefill.observe(prefillSeconds);
    }

    @Override
    public void token(double interTokenSeconds) {
        itl.observe(interTokenSeconds);
    }

    @Override
    public void finished(FinishReason reason, double e2eSeconds, double decodeSeconds, Usage usage) {
        e2e.observe(e2eSeconds);
        decode.observe(decodeSeconds);
        success.labelValues(model, reason.wire()).inc();
        promptTokens.inc(usage.promptTokens());
        generationTokens.inc(usage.completionTokens());
    }
}
