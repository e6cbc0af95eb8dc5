package io.phxfs.cli.serve;

import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.serving.engine.EngineConfig;
import io.phxfs.serving.engine.GenerationEngine;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.VirtualThreadPool;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * The OpenAI-compatible server: a generation engine behind Jetty 12 (its core API, every task on
 * a virtual thread). {@link #start} opens both; {@link #close} drains: Jetty stops taking
 * connections and waits for the requests under way (streams included) to end, then the engine
 * finishes what it still holds and lets go of the model.
 */
final class ApiServer implements AutoCloseable {
    /** How long a drain waits for the requests under way before it closes their connections. */
    static final long DRAIN_MILLIS = 60_000;
    /** Connections silent for this long are closed (a generation under way is never cut: see Exchange). */
    static final long IDLE_MILLIS = 300_000;

    private final GenerationEngine engine;
    private final Server server;
    private final ServerConnector connector;
    private final ServeMetrics metrics;
    private final String servedName;
    private boolean closed;

    private ApiServer(GenerationEngine engine, Server server, ServerConnector connector, ServeMetrics metrics,
                      String servedName) {
        this.engine = engine;
        this.server = server;
        this.connector = connector;
        this.metrics = metrics;
        this.servedName = servedName;
    }

    /**
     * Opens the engine and starts listening.
     *
     * @param config the engine's configuration; its observer is replaced by the server's metrics
     * @param servedName the name clients give as {@code model}
     * @param host the address to bind
     * @param port the port, 0 for any free one (see {@link #port})
     * @param log where errors go
     */
    static ApiServer start(EngineConfig config, String servedName, String host, int port, PrintWriter log)
            throws Exception {
        ServeMetrics metrics = new ServeMetrics(servedName);
        GenerationEngine engine = GenerationEngine.open(config.withObserver(metrics));
        try {
            metrics.bind(engine);
            ServeContext ctx = new ServeContext(engine, servedName, log);
            Set<String> post = Set.of("POST");
            Set<String> get = Set.of("GET");
            Router router = new Router(List.of(
                    new Router.Route("/v1/completions", false, post, new CompletionsEndpoint(ctx)),
                    new Router.Route("/v1/chat/completions", false, post, new ChatCompletionsEndpoint(ctx)),
                    new Router.Route("/v1/models", false, get, InfoEndpoints.models(ctx)),
                    new Router.Route(InfoEndpoints.MODEL_PREFIX, true, get, InfoEndpoints.model(ctx)),
                    new Router.Route("/health", false, get, InfoEndpoints.health(ctx)),
                    new Router.Route("/metrics", false, get, ex -> {
                        ServeMetrics.Scrape s = metrics.scrape(ex.header(HttpHeader.ACCEPT));
                        ex.send(200, s.contentType(), s.body());
                    })), log);

            VirtualThreadPool pool = new VirtualThreadPool();
            pool.setName("phoenix-serve");
            Server server = new Server(pool);
            HttpConfiguration http = new HttpConfiguration();
            http.setSendServerVersion(false);
            http.setSendXPoweredBy(false);
            ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(http));
            connector.setHost(host);
            connector.setPort(port);
            connector.setIdleTimeout(IDLE_MILLIS);
            server.addConnector(connector);
            // GracefulHandler: on stop, new requests get 503 and Jetty waits for those under way
            server.setHandler(new GracefulHandler(router));
            server.setStopTimeout(DRAIN_MILLIS);
            server.setStopAtShutdown(false);
            server.setErrorHandler(new JsonErrorHandler());
            server.start();
            return new ApiServer(engine, server, connector, metrics, servedName);
        } catch (Exception | Error e) {
            engine.close();
            throw e;
        }
    }

    /** The port listened on. */
    int port() {
        return connector.getLocalPort();
    }

    /** The base URL that OpenAI clients take, {@code http://HOST:PORT/v1}. */
    URI baseUri() {
        String host = connector.getHost() == null ? "0.0.0.0" : connector.getHost();
        if (host.contains(":") && !host.startsWith("[")) {
            host = "[" + host + "]";
        }
        return URI.create("http://" + host + ":" + port() + "/v1");
    }

    GenerationEngine engine() {
        return engine;
    }

    ServeMetrics metrics() {
        return metrics;
    }

    String servedName() {
        return servedName;
    }

    /**
     * Drains and stops: Jetty first (requests under way end), then the engine. Idempotent.
     *
     * @throws IllegalStateException when Jetty fails to stop (the engine is closed all the same)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.stop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new IllegalStateException("stopping the HTTP server: " + e.getMessage(), e);
        } finally {
            engine.close();
        }
    }

    /**
     * {@code phoenix serve}: opens, prints the URL, serves until SIGTERM or SIGINT, drains, and
     * returns 0. A second signal during the drain exits at once (status 130 or 143).
     */
    static int run(ServeOptions o, PrintWriter out, PrintWriter err) throws Exception {
        EngineConfig config = EngineConfig.of(o.modelDir()).withDevice(o.device())
                .withLimits(o.maxRunning(), o.maxWaiting()).withIdlePrefixBytes(o.idlePrefixBytes());
        if (o.kvConfig() != null) {
            config = config.withKvCache(KvCacheConfig.load(o.kvConfig()));
        }
        CountDownLatch stop = new CountDownLatch(1);
        AtomicInteger signals = new AtomicInteger();
        SignalHandler onSignal = sig -> {
            if (signals.incrementAndGet() == 1) {
                stop.countDown();
            } else {
                err.println("phoenix serve: " + sig.getName() + " again: exiting without draining");
                err.flush();
                Runtime.getRuntime().halt(128 + sig.getNumber());
            }
        };
        // before the model loads: a Ctrl-C while it does still ends with a drain (of nothing)
        Signal.handle(new Signal("INT"), onSignal);
        Signal.handle(new Signal("TERM"), onSignal);
        ApiServer s = start(config, o.servedName(), o.bind(), o.port(), err);
        out.println("phoenix serve: " + o.servedName() + " listening on " + s.baseUri()
                + " (OpenAI API; Ctrl-C drains and stops)");
        out.flush();
        stop.await();
        int busy = s.engine().running() + s.engine().waiting();
        err.println("phoenix serve: stopping" + (busy > 0 ? ", finishing " + busy + " request" + (busy == 1 ? "" : "s")
                : ""));
        err.flush();
        long t0 = System.nanoTime();
        s.close();
        err.println("phoenix serve: stopped after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms");
        err.flush();
        return 0;
    }

    /** Jetty's own errors (a malformed request line, headers too large, 503 while draining) in OpenAI's shape. */
    static final class JsonErrorHandler extends ErrorHandler {
        @Override
        protected void generateResponse(Request request, Response response, int code, String message, Throwable cause,
                                        Callback callback) throws IOException {
            String type = code >= 500 ? ApiException.SERVER_ERROR : ApiException.INVALID_REQUEST;
            String m = message != null ? message : cause != null ? StreamBridge.message(cause) : "HTTP " + code;
            if (code == 503) {
                m = "The server is shutting down: " + m;
            }
            byte[] body = OpenAiJson.bytes(OpenAiJson.errorNode(m, type, null, null));
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, Exchange.JSON);
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
            response.write(true, ByteBuffer.wrap(body), callback);
        }
    }
}
