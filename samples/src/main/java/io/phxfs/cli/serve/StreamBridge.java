package io.phxfs.cli.serve;

import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.GenerationHandle;
import io.phxfs.serving.engine.GenerationListener;
import io.phxfs.serving.engine.Usage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;

/**
 * One request's generation, from the engine's thread to the HTTP handler's (a virtual thread):
 * the listener only queues what happens, never blocks; the handler takes it off the queue and
 * either collects the whole text or writes each piece as a server-sent event the moment it
 * comes (pieces that came together go out in one write). A write that fails, or Jetty seeing
 * the connection fail, cancels the generation.
 */
final class StreamBridge implements GenerationListener {
    /** What the engine (or Jetty) said. */
    sealed interface Event permits Text, Finished, Failed, Gone {
    }

    record Text(String piece) implements Event {
    }

    record Finished(FinishReason reason, Usage usage) implements Event {
    }

    record Failed(Throwable error) implements Event {
    }

    /** The client's connection failed: cancel. */
    record Gone(Throwable why) implements Event {
    }

    /** The stream's chunks (OpenAI's JSON, without the SSE framing) for one request. */
    interface Chunks {
        /** The chunk sent before any text (chat's role), or null for none. */
        byte[] first();

        /**
         * The chunks for one token's text: one, its text possibly empty, for plain text; none
         * or several when tool calls are parsed out of it (text held back, a whole call).
         */
        List<byte[]> text(String piece);

        /** The chunks that end the choice: what was held back, then the one with the finish reason. */
        List<byte[]> last(FinishReason reason);

        /** The usage chunk, or null when the client did not ask for it. */
        byte[] usage(Usage usage);
    }

    /**
     * A whole generation.
     *
     * @param error what failed, or null; then text, reason and usage are null
     */
    record Outcome(String text, FinishReason reason, Usage usage, Throwable error) {
    }

    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    /** Why the client went away while {@link #collect} waited, or null. */
    private Throwable gone;

    @Override
    public void onText(String piece, int[] tokenIds) {
        events.add(new Text(piece));
    }

    @Override
    public void onFinish(FinishReason reason, Usage usage) {
        events.add(new Finished(reason, usage));
    }

    @Override
    public void onError(Throwable error) {
        events.add(new Failed(error));
    }

    /** Jetty saw the request fail (the client closed or reset its connection). */
    void clientGone(Throwable why) {
        events.add(new Gone(why));
    }

    /**
     * Waits for the end and returns the whole text. A client that goes away meanwhile cancels
     * the generation, whose (cancelled) end is still waited for.
     */
    Outcome collect(GenerationHandle handle) throws InterruptedException {
        StringBuilder text = new StringBuilder();
        try {
            for (;;) {
                switch (events.take()) {
                    case Text t -> text.append(t.piece());
                    case Finished f -> {
                        return new Outcome(text.toString(), f.reason(), f.usage(), null);
                    }
                    case Failed f -> {
                        return new Outcome(null, null, null, f.error());
                    }
                    case Gone g -> {
                        if (gone == null) {
                            gone = g.why();
                        }
                        handle.cancel();
                    }
                }
            }
        } catch (InterruptedException e) {
            handle.cancel();
            throw e;
        }
    }

    /** Why the client went away while {@link #collect} waited (its answer is then for no one), or null. */
    Throwable gone() {
        return gone;
    }

    /**
     * Streams the generation as server-sent events to the end ({@code data: [DONE]}) and
     * completes the exchange: succeeded, or failed when the client went away (the generation
     * is then cancelled). An engine error after the stream began is sent as an error event.
     *
     * @param onError where an engine error is logged
     */
    void stream(GenerationHandle handle, Exchange ex, Chunks chunks, Consumer<Throwable> onError)
            throws InterruptedException {
        ex.startStream();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] first = chunks.first();
        if (first != null) {
            buf.writeBytes(OpenAiJson.event(first));
        }
        // the status line and headers go out now, so that the client sees the stream begin
        if (!flush(buf, false, handle, ex)) {
            return;
        }
        List<Event> batch = new ArrayList<>();
        try {
            for (;;) {
                batch.add(events.take());
                events.drainTo(batch);
                boolean end = false;
                for (Event e : batch) {
                    switch (e) {
                        // one chunk per token, its text possibly empty (a token that ends no
                        // character or word yet, a special token, text held back for a stop
                        // string), as vLLM streams token deltas: a client sees each token when it
                        // is made, and its time to first token is the engine's
                        case Text t -> chunks.text(t.piece()).forEach(c -> buf.writeBytes(OpenAiJson.event(c)));
                        case Finished f -> {
                            chunks.last(f.reason()).forEach(c -> buf.writeBytes(OpenAiJson.event(c)));
                            byte[] u = chunks.usage(f.usage());
                            if (u != null) {
                                buf.writeBytes(OpenAiJson.event(u));
                            }
                            end = true;
                        }
                        case Failed f -> {
                            onError.accept(f.error());
                            buf.writeBytes(OpenAiJson.event(OpenAiJson.bytes(OpenAiJson.errorNode(
                                    "The generation failed: " + message(f.error()), ApiException.SERVER_ERROR,
                                    null, null))));
                            end = true;
                        }
                        case Gone g -> {
                            handle.cancel();
                            ex.fail(g.why());
                            return;
                        }
                    }
                    if (end) {
                        break;
                    }
                }
                batch.clear();
                if (end) {
                    buf.writeBytes(OpenAiJson.DONE);
                }
                if (!flush(buf, end, handle, ex)) {
                    return;
                }
                if (end) {
                    ex.succeed();
                    return;
                }
            }
        } catch (InterruptedException e) {
            handle.cancel();
            ex.fail(e);
            throw e;
        }
    }

    /** Writes what is buffered; false when the client is gone (the generation then cancelled). */
    private static boolean flush(ByteArrayOutputStream buf, boolean last, GenerationHandle handle, Exchange ex) {
        try {
            ex.write(last, buf.toByteArray());
            buf.reset();
            return true;
        } catch (IOException e) {
            handle.cancel();
            ex.fail(e);
            return false;
        }
    }

    static String message(Throwable t) {
        return t.getMessage() == null ? t.toString() : t.getMessage();
    }
}
