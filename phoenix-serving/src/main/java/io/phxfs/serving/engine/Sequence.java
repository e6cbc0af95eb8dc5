package io.phxfs.serving.engine;

import io.phxfs.serving.guided.Guide;
import io.phxfs.serving.text.HfTokenizer;
import io.phxfs.serving.text.IncrementalDetokenizer;

/**
 * A request on its way through the engine: its cache, its sampler, its text so far, its
 * timings. Touched only by the engine's thread, but for {@link #cancel}.
 */
final class Sequence implements GenerationHandle {
    final GenerationRequest request;
    final GenerationListener listener;
    final long arrivedNanos = System.nanoTime();
    final Sampler sampler;
    final StopStrings stops;
    private volatile boolean cancelled;
    IncrementalDetokenizer detokenizer;
    SequenceKv kv;
    int cachedTokens;
    int generated;
    int lastToken;
    long scheduledNanos;
    /** When its cache was ready (allocated, filled from the tier), and the time its prefill pieces took. */
    long cacheReadyNanos;
    long prefillNanos;
    int prefillPieces;
    long firstTokenNanos;
    long lastTokenNanos;
    boolean done;

    Sequence(GenerationRequest request, GenerationListener listener, Guide guide) {
        this.request = request;
        this.listener = listener;
        this.sampler = new Sampler(request.sampling(), request.promptIds(), guide);
        this.stops = new StopStrings(request.sampling().stop(), request.sampling().includeStopStrInOutput());
    }

    void startText(HfTokenizer tokenizer) {
        // a guided output is text whose bytes the schema matched: no space cleanup rewrites it
        detokenizer = new IncrementalDetokenizer(tokenizer, request.promptIds(), request.sampling().skipSpecialTokens(),
                request.guide() != null);
    }

    @Override
    public String id() {
        return request.id();
    }

    /** Set by the scheduler: wakes its loop, so that a cancelled waiting request leaves the queue at once. */
    volatile Runnable onCancel = () -> { };

    @Override
    public void cancel() {
        if (!cancelled) {
            cancelled = true;
            onCancel.run();
        }
    }

    boolean cancelled() {
        return cancelled;
    }

    int promptTokens() {
        return request.promptIds().length;
    }

    Usage usage() {
        return new Usage(promptTokens(), generated, cachedTokens);
    }
}
