package io.phxfs.cli.serve;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CancellationException;
import java.util.function.Consumer;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.io.AbstractEndPoint;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.io.EofException;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.Callback;

/**
 * Sees an HTTP/1.x client close its connection while its request is computed (queued, prefilled,
 * decoded) and its answer not yet written whole, as vLLM's {@code request.is_disconnected()} and
 * Starlette's disconnect listener for a stream do.
 *
 * <p>Jetty reads an HTTP/1.1 connection only for a request's head and body and between requests:
 * once the body is read, a client that closes (FIN or RST) changes nothing Jetty looks at, neither
 * the request's failure listeners nor {@code EndPoint.isOpen()}; it shows only when the answer is
 * written, after the whole generation, or for a stream at its first token, after its wait in the
 * queue and its prefill (so on 12.1.14, tried with raw sockets and curl). So this
 * registers a read interest of its own on the connection's EndPoint: the selector wakes it on the
 * client's FIN or RST, one fill reads -1 (or fails), {@code onGone} runs at once and the
 * connection is closed.
 *
 * <p>{@link #stop} must take the interest back before the answer's last write (a stream's
 * earlier writes leave it: writes and this read interest do not meet): when the request
 * completes Jetty registers its own read interest for the next request, and finding one still
 * pending it closes the connection ("Pending read in onCompleted"), which would end keep-alive.
 *
 * <p>Not for HTTP/2: its connection reads all the time (a read interest of ours would take its
 * frames) and Jetty fails the request's stream itself on a RST_STREAM or a closed connection,
 * which {@link Exchange#onFailure} already sees.
 */
final class ClientCloseWatch implements Callback {
    /** Fails our read interest when it is taken back; never reaches {@code onGone}. */
    private static final CancellationException STOPPED = new CancellationException("the request was answered");

    private final AbstractEndPoint endPoint;
    private final Consumer<Throwable> onGone;
    private final ByteBuffer probe = BufferUtil.allocate(1);
    /** Guarded by this: the interest is taken back while no fill is under way. */
    private boolean armed;
    private boolean stopped;
    private boolean spilled;

    private ClientCloseWatch(AbstractEndPoint endPoint, Consumer<Throwable> onGone) {
        this.endPoint = endPoint;
        this.onGone = onGone;
    }

    /**
     * Starts watching a request whose body has been read whole, or returns null where there is
     * nothing to watch this way (HTTP/2, an EndPoint whose read interest cannot be taken back).
     *
     * @param onGone called once, on one of Jetty's threads, when the client is gone
     */
    static ClientCloseWatch start(Request request, Consumer<Throwable> onGone) {
        HttpVersion v = request.getConnectionMetaData().getHttpVersion();
        EndPoint ep = request.getConnectionMetaData().getConnection().getEndPoint();
        if ((v != HttpVersion.HTTP_1_1 && v != HttpVersion.HTTP_1_0) || !(ep instanceof AbstractEndPoint aep)) {
            return null;
        }
        ClientCloseWatch w = new ClientCloseWatch(aep, onGone);
        synchronized (w) {
            // false: Jetty itself still reads (a body not read to its end): then its own reads see a close
            w.armed = aep.tryFillInterested(w);
        }
        return w;
    }

    /** The connection is readable: the client closed it, reset it, or sent more bytes. */
    @Override
    public void succeeded() {
        Throwable gone;
        synchronized (this) {
            armed = false;
            if (stopped) {
                return;
            }
            try {
                int n = endPoint.fill(probe);
                if (n == 0) {
                    armed = endPoint.tryFillInterested(this);
                    return;
                }
                if (n > 0) {
                    // bytes past the request: a client pipelining after a POST, which RFC 9112 (9.3.2)
                    // says it should not do. The byte taken is lost to Jetty's parser, so the answer
                    // closes the connection (see stop), and the client retries what it had pipelined
                    spilled = true;
                    return;
                }
                gone = new EofException("the client closed its connection");
            } catch (IOException e) {
                gone = e;
            }
        }
        onGone.accept(gone);
        // no answer then, as vLLM gives none: a client that only half-closed gets an end of stream,
        // not Jetty's error page for a request that failed
        endPoint.close(gone);
    }

    /** The interest failed: taken back by {@link #stop}, or the EndPoint closed under it. */
    @Override
    public void failed(Throwable x) {
        synchronized (this) {
            armed = false;
            if (stopped) {
                return;
            }
        }
        onGone.accept(x);
    }

    /**
     * Stops watching (before the answer is written); idempotent.
     *
     * @return whether a byte past the request was read, so that the connection must close after the answer
     */
    synchronized boolean stop() {
        stopped = true;
        if (armed) {
            armed = false;
            // while a request is handled Jetty holds no read interest of its own (see start), so the
            // one failed here is ours
            endPoint.getFillInterest().onFail(STOPPED);
        }
        return spilled;
    }
}
