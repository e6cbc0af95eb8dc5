package io.phxfs.serving.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A listener that keeps everything it hears, checking the order of the calls. */
final class Collector implements GenerationListener {
    record Result(String text, List<String> pieces, int[] tokens, FinishReason reason, Usage usage, int cachedAtStart) {
    }

    private final StringBuilder text = new StringBuilder();
    private final List<String> pieces = new ArrayList<>();
    private final List<Integer> tokens = new ArrayList<>();
    private final CompletableFuture<Result> done = new CompletableFuture<>();
    private volatile int cached = -1;
    private volatile boolean started;

    @Override
    public void onStart(int promptTokens, int cachedTokens) {
        if (started) {
            done.completeExceptionally(new AssertionError("onStart twice"));
        }
        started = true;
        cached = cachedTokens;
    }

    @Override
    public synchronized void onText(String piece, int[] ids) {
        if (!started) {
            done.completeExceptionally(new AssertionError("onText before onStart"));
        }
        pieces.add(piece);
        text.append(piece);
        for (int id : ids) {
            tokens.add(id);
        }
    }

    @Override
    public synchronized void onFinish(FinishReason reason, Usage usage) {
        done.complete(new Result(text.toString(), List.copyOf(pieces), tokens.stream().mapToInt(Integer::intValue).toArray(),
                reason, usage, cached));
    }

    @Override
    public void onError(Throwable error) {
        done.completeExceptionally(error);
    }

    Result await() throws Exception {
        return done.get(120, TimeUnit.SECONDS);
    }

    CompletableFuture<Result> future() {
        return done;
    }
}
