package io.phxfs.cli.serve;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Blocker;
import org.eclipse.jetty.util.Callback;

/**
 * One HTTP request and its response on Jetty's core API, for handlers that block (they run on
 * virtual threads): read the body, answer once, or stream. Completes Jetty's callback exactly
 * once, failed when a write fails (the client went away).
 */
final class Exchange {
    /** JSON, as OpenAI answers it. */
    static final String JSON = "application/json";
    /** Server-sent events. */
    static final String SSE = "text/event-stream; charset=utf-8";

    private final Request request;
    private final Response response;
    private final Callback callback;
    private final AtomicBoolean completed = new AtomicBoolean();
    /** Set and stopped on the handler's thread only. */
    private ClientCloseWatch watch;
    /** A committed response whose connection must end with it (see {@link #stopWatch}). */
    private boolean closeAfter;

    Exchange(Request request, Response response, Callback callback) {
        this.request = request;
        this.response = response;
        this.callback = callback;
    }

    Request request() {
        return request;
    }

    String method() {
        return request.getMethod();
    }

    String path() {
        return Request.getPathInContext(request);
    }

    String header(HttpHeader h) {
        return request.getHeaders().get(h);
    }

    boolean completed() {
        return completed.get();
    }

    boolean committed() {
        return response.isCommitted();
    }

    /**
     * The whole body.
     *
     * @throws ApiException 413 past {@code limit} bytes
     * @throws IOException when the client stops sending
     */
    byte[] body(int limit) throws IOException {
        long declared = request.getLength();
        if (declared > limit) {
            throw new ApiException(413, ApiException.INVALID_REQUEST,
                    "The request body has " + declared + " bytes, more than the " + limit + " this server takes.",
                    null, null);
        }
        try (InputStream in = Request.asInputStream(request)) {
            byte[] b = in.readNBytes(limit + 1);
            if (b.length > limit) {
                throw new ApiException(413, ApiException.INVALID_REQUEST,
                        "The request body is larger than the " + limit + " bytes this server takes.", null, null);
            }
            return b;
        } catch (IOException e) {
            // the client stopped sending (early EOF), sent a bad chunk, or sent too slowly: its fault,
            // answered (if it still reads) and not logged as the server's
            throw new ApiException(400, ApiException.INVALID_REQUEST, "The request body could not be read whole: "
                    + StreamBridge.message(e), null, null);
        }
    }

    /**
     * Calls {@code onGone} when Jetty sees the request fail: a write failed, the connector
     * stopped under it, the connection was reset where Jetty reads it (HTTP/2: always). Jetty
     * calls it on one of its own threads. Over HTTP/1.1 Jetty does not read the socket while a
     * request is handled, so a client that closes is seen only at the next write; until the
     * response's last write {@link #watchClose} sees it at once.
     */
    void onFailure(Consumer<Throwable> onGone) {
        request.addFailureListener(onGone);
        // a generation may be silent for longer than the idle timeout (a long non-streamed
        // completion, a long queue): that is no failure of the client's
        request.addIdleTimeoutListener(t -> false);
    }

    /**
     * Until the response's last write (or {@link #fail}), calls {@code onGone} when an HTTP/1.x
     * client closes its connection: see {@link ClientCloseWatch}. A stream's writes before its
     * last leave the watch on: between its head and its first token (a queue, a long prefill) a
     * stream writes nothing that could fail. Called once the body has been read whole.
     */
    void watchClose(Consumer<Throwable> onGone) {
        stopWatch();
        watch = ClientCloseWatch.start(request, onGone);
    }

    private void stopWatch() {
        ClientCloseWatch w = watch;
        if (w == null) {
            return;
        }
        watch = null;
        if (w.stop()) {
            // the watch took a byte the next request needs: this connection carries no other
            if (!response.isCommitted()) {
                response.getHeaders().put(HttpHeader.CONNECTION, "close");
            } else {
                closeAfter = true;
            }
        }
    }

    /** Answers with a whole body and completes. */
    void send(int status, String contentType, byte[] body) {
        if (completed.get()) {
            return;
        }
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, contentType);
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        try {
            write(true, body);
            succeed();
        } catch (IOException e) {
            fail(e);
        }
    }

    void sendJson(int status, byte[] body) {
        send(status, JSON, body);
    }

    /** Answers an error in OpenAI's shape (and Allow, Retry-After where they belong). */
    void sendError(ApiException e) {
        if (committed()) {
            // a stream under way: the caller ends it with an error event instead
            fail(e);
            return;
        }
        if (e.status() == 429) {
            response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
        }
        sendJson(e.status(), OpenAiJson.error(e));
    }

    /** Sets an extra response header before the response is sent. */
    void header(HttpHeader h, String value) {
        response.getHeaders().put(h, value);
    }

    /** Starts a 200 event stream; {@link #write} sends its events. */
    void startStream() {
        response.setStatus(200);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, SSE);
        response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-cache");
        // nginx and other proxies: pass each event on as it comes
        response.getHeaders().put("X-Accel-Buffering", "no");
    }

    /**
     * Writes and waits until written.
     *
     * @param last whether this ends the response
     * @throws IOException when the client is gone
     */
    void write(boolean last, byte[] bytes) throws IOException {
        if (last) {
            stopWatch();
        }
        try (Blocker.Callback b = Blocker.callback()) {
            response.write(last, ByteBuffer.wrap(bytes), b);
            b.block();
        }
    }

    void succeed() {
        stopWatch();
        if (completed.compareAndSet(false, true)) {
            if (closeAfter) {
                // the whole response is written: the client reads it to its end, then the FIN
                request.getConnectionMetaData().getConnection().getEndPoint().shutdownOutput();
            }
            callback.succeeded();
        }
    }

    void fail(Throwable t) {
        stopWatch();
        if (completed.compareAndSet(false, true)) {
            callback.failed(t);
        }
    }
}
