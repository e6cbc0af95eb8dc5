package io.phxfs.cli.serve;

import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.serving.engine.EngineConfig;
import io.phxfs.serving.engine.GenerationEngine;
import io.phxfs.serving.engine.GenerationListener;
import io.phxfs.serving.tools.ToolCallParser;
import io.phxfs.serving.reasoning.ReasoningParser;
import io.phxfs.serving.reasoning.ReasoningParsers;
import io.phxfs.serving.tools.ToolParsers;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Handler;
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

    private final GenerationEngine engine;
    private final Server server;
    private final ServerConnector connector;
    private final ServeMetrics metrics;
    private final String servedName;
    private final HeaderDeadline headers;
    private boolean closed;

    private ApiServer(GenerationEngine engine, Server server, ServerConnector connector, ServeMetrics metrics,
                      String servedName, HeaderDeadline headers) {
        this.engine = engine;
        this.server = server;
        this.connector = connector;
        this.metrics = metrics;
        this.servedName = servedName;
        this.headers = headers;
    }

    /** {@link #start(EngineConfig, String, String, int, HttpPolicy, PrintWriter)} with no key and the default limits. */
    static ApiServer start(EngineConfig config, String servedName, String host, int port, PrintWriter log)
            throws Exception {
        return start(config, servedName, host, port, HttpPolicy.defaults(), log);
    }

    /**
     * Opens the engine and starts listening.
     *
     * @param config the engine's configuration; its observer is replaced by the server's metrics
     * @param servedName the name clients give as {@code model}
     * @param host the address to bind
     * @param port the port, 0 for any free one (see {@link #port})
     * @param policy the API key, the server-wide cache salt and the limits
     * @param log where errors go
     */
    static ApiServer start(EngineConfig config, String servedName, String host, int port, HttpPolicy policy,
                           PrintWriter log) throws Exception {
        return start(config, servedName, host, port, policy, null, UnaryOperator.identity(), log);
    }

    /**
     * Opens the engine and starts listening, with tool calling.
     *
     * @param toolParser the parser for {@code tool_choice: "auto"}, or null when it is off
     * @param listenerTap wraps each request's listener (the identity but in tests, see {@link ServeContext})
     * @see #start(EngineConfig, String, String, int, HttpPolicy, PrintWriter)
     */
    static ApiServer start(EngineConfig config, String servedName, String host, int port, HttpPolicy policy,
                           ToolCallParser toolParser, UnaryOperator<GenerationListener> listenerTap, PrintWriter log)
            throws Exception {
        return start(config, servedName, host, port, policy, toolParser, null, listenerTap, log);
    }

    /**
     * Opens the engine and starts listening, with tool calling and reasoning.
     *
     * @param toolParser the parser for {@code tool_choice: "auto"}, or null when it is off
     * @param reasoningParser the parser of chats' reasoning ({@code --reasoning-parser}), or null for none
     * @param listenerTap wraps each request's listener (the identity but in tests, see {@link ServeContext})
     * @see #start(EngineConfig, String, String, int, HttpPolicy, PrintWriter)
     */
    static ApiServer start(EngineConfig config, String servedName, String host, int port, HttpPolicy policy,
                           ToolCallParser toolParser, ReasoningParser reasoningParser,
                           UnaryOperator<GenerationListener> listenerTap, PrintWriter log) throws Exception {
        ServeMetrics metrics = new ServeMetrics(servedName);
        GenerationEngine engine = GenerationEngine.open(config.withObserver(metrics));
        try {
            metrics.bind(engine);
            ServeContext ctx = new ServeContext(engine, servedName, log, policy, toolParser, reasoningParser,
                    listenerTap);
            Set<String> post = Set.of("POST");
            Set<String> get = Set.of("GET");
            Router router = new Router(List.of(
                    new Router.Route("/v1/completions", false, post, new CompletionsEndpoint(ctx)),
                    new Router.Route("/v1/chat/completions", false, post, new ChatCompletionsEndpoint(ctx)),
                    new Router.Route("/v1/models", false, get, InfoEndpoints.models(ctx)),
                    new Router.Route(InfoEndpoints.MODEL_PREFIX, true, get, InfoEndpoints.model(ctx)),
                    new Router.Route("/health", false, get, InfoEndpoints.health(ctx)),
                    new Router.Route("/tokenize", false, post, TokenizerEndpoints.tokenize(ctx)),
                    new Router.Route("/detokenize", false, post, TokenizerEndpoints.detokenize(ctx)),
                    new Router.Route("/version", false, get, TokenizerEndpoints.version()),
                    new Router.Route("/metrics", false, get, ex -> {
                        ServeMetrics.Scrape s = metrics.scrape(ex.header(HttpHeader.ACCEPT));
                        ex.send(200, s.contentType(), s.body());
                    })), log, policy);

            VirtualThreadPool pool = new VirtualThreadPool();
            pool.setName("phoenix-serve");
            Server server = new Server(pool);
            HttpConfiguration http = new HttpConfiguration();
            http.setSendServerVersion(false);
            http.setSendXPoweredBy(false);
            // the request line and headers together (431 past it); the body's cap is the endpoints'
            http.setRequestHeaderSize(policy.maxHeaderBytes());
            http.setIdleTimeout(policy.idleTimeoutMillis());
            // a served name with a slash (org/model, as Hugging Face names go) comes as
            // /v1/models/org%2Fmodel from the SDKs, which encode the id; the routes are exact paths
            http.setUriCompliance(UriCompliance.DEFAULT.with("phoenix serve",
                    UriCompliance.Violation.AMBIGUOUS_PATH_SEPARATOR));
            ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(http));
            connector.setHost(host);
            connector.setPort(port);
            connector.setIdleTimeout(policy.idleTimeoutMillis());
            server.addConnector(connector);
            // past the cap Jetty stops accepting: new connections wait in the kernel's backlog
            server.addBean(new NetworkConnectionLimit(policy.maxConnections(), connector));
            // GracefulHandler: on stop, new requests get 503 and Jetty waits for those under way
            HeaderDeadline headers = new HeaderDeadline(connector, policy.headerTimeoutMillis());
            // CORS outermost: a preflight is answered before the API key is asked for, and the
            // drain's 503s carry the origin's grant too
            server.setHandler(CorsHandler.wrap(policy.cors(), new GracefulHandler(headers.wrap(router))));
            server.setStopTimeout(DRAIN_MILLIS);
            server.setStopAtShutdown(false);
            server.setErrorHandler(new JsonErrorHandler());
            try {
                server.start();
            } catch (java.io.IOException e) {
                headers.close();
                throw bindFailure(e);
            } catch (Exception | Error e) {
                headers.close();
                throw e;
            }
            return new ApiServer(engine, server, connector, metrics, servedName, headers);
        } catch (Exception | Error e) {
            engine.close();
            throw e;
        }
    }

    /**
     * Jetty's "Failed to bind to /127.0.0.1:8000" with the OS's reason it holds as its cause, and
     * what to do about the two common ones.
     */
    static java.io.IOException bindFailure(java.io.IOException e) {
        if (!(e.getCause() instanceof java.net.BindException b) || b.getMessage() == null) {
            return e;
        }
        String why = b.getMessage();
        String hint = why.contains("in use") ? " (another process listens there: stop it or choose another --port)"
                : why.contains("ermission") ? " (ports below 1024 need root or CAP_NET_BIND_SERVICE: choose --port 1024 or above)"
                : why.contains("assign") ? " (no interface of this machine has that address: check --bind)" : "";
        return new java.io.IOException(e.getMessage() + ": " + why + hint, e);
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

    /** The connections open now. */
    int connections() {
        return connector.getConnectedEndPoints().size();
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
        headers.close();
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
     * The parser for {@code tool_choice: "auto"}, or null when {@code --enable-auto-tool-choice}
     * is off. As in vLLM, auto tool choice needs both flags; a parser alone would never be used,
     * so it is refused rather than silently ignored.
     *
     * @throws IllegalArgumentException for one flag without the other or an unknown parser name
     */
    static ToolCallParser toolParser(ServeOptions o) {
        if (o.autoToolChoice() && o.toolCallParser() == null) {
            throw new IllegalArgumentException("--enable-auto-tool-choice requires --tool-call-parser ("
                    + String.join(", ", ToolParsers.names()) + ")");
        }
        if (o.toolCallParser() == null) {
            return null;
        }
        if (!o.autoToolChoice()) {
            throw new IllegalArgumentException("--tool-call-parser " + o.toolCallParser() + ": also give"
                    + " --enable-auto-tool-choice (the parser serves tool_choice \"auto\" only, as in vLLM)");
        }
        try {
            return ToolParsers.byName(o.toolCallParser());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--tool-call-parser " + o.toolCallParser() + ": " + e.getMessage());
        }
    }

    /**
     * The parser of {@code --reasoning-parser}, or null when it is not given.
     *
     * @throws IllegalArgumentException for an unknown name (the message lists the known ones)
     */
    static ReasoningParser reasoningParser(ServeOptions o) {
        if (o.reasoningParser() == null) {
            return null;
        }
        try {
            return ReasoningParsers.byName(o.reasoningParser());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--reasoning-parser " + o.reasoningParser() + ": " + e.getMessage());
        }
    }

    /**
     * The KV tier: {@code --kv-config}, else LMCache's own environment ({@code LMCACHE_CONFIG_FILE}
     * or {@code LMCACHE_*} settings), as a vLLM server with LMCache reads it; none without either.
     */
    static KvCacheConfig kvCache(ServeOptions o, java.util.Map<String, String> env, PrintWriter err) {
        if (o.kvConfig() != null) {
            return KvCacheConfig.load(o.kvConfig());
        }
        KvCacheConfig kv = KvCacheConfig.fromEnvironment(env);
        if (kv != null) {
            String file = env.get("LMCACHE_CONFIG_FILE");
            err.println("phoenix serve: KV tier from " + (file != null && !file.isBlank() ? "LMCACHE_CONFIG_FILE " + file.strip()
                    : "the LMCACHE_* environment") + " (--kv-config takes precedence)");
            err.flush();
        }
        return kv;
    }

    /**
     * {@code phoenix serve}: opens, prints the URL, serves until SIGTERM or SIGINT, drains, and
     * returns 0. A second signal during the drain exits at once (status 130 or 143).
     */
    static int run(ServeOptions o, PrintWriter out, PrintWriter err) throws Exception {
        ToolCallParser toolParser = toolParser(o);
        ReasoningParser reasoningParser = reasoningParser(o);
        EngineConfig config = EngineConfig.of(o.modelDir()).withDevice(o.device())
                .withLimits(o.maxRunning(), o.maxWaiting()).withIdlePrefixBytes(o.idlePrefixBytes());
        KvCacheConfig kv = kvCache(o, System.getenv(), err);
        if (kv != null) {
            config = config.withKvCache(kv);
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
        HttpPolicy policy = o.policy() == null ? HttpPolicy.defaults() : o.policy();
        ApiServer s = start(config, o.servedName(), o.bind(), o.port(), policy, toolParser, reasoningParser,
                UnaryOperator.identity(),
                err);
        if (!policy.keyRequired() && !loopback(o.bind())) {
            err.println("phoenix serve: warning: listening on " + o.bind() + " beyond this machine without an API key:"
                    + " anyone who can reach the port can generate (and time the prefix cache); set --api-key or"
                    + " PHOENIX_API_KEY, or --bind 127.0.0.1");
            err.flush();
        }
        if (!policy.keyRequired() && policy.cors().origins().contains("*")) {
            err.println("phoenix serve: warning: --allowed-origins * without an API key: any web page open in a browser"
                    + " that can reach the port can generate; name the origins, or set --api-key");
            err.flush();
        }
        // the key itself is never printed
        out.println("phoenix serve: " + o.servedName() + " listening on " + s.baseUri()
                + " (OpenAI API" + (policy.keyRequired() ? ", API key required" : "") + "; Ctrl-C drains and stops)");
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

    /** Whether every address the name stands for is a loopback one (0.0.0.0 and :: are not). */
    static boolean loopback(String host) {
        if (host == null || host.isBlank()) {
            return false;
        }
        try {
            for (InetAddress a : InetAddress.getAllByName(host)) {
                if (!a.isLoopbackAddress()) {
                    return false;
                }
            }
            return true;
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /**
     * Against slowloris: a client that sends its request line and headers a byte at a time keeps
     * the idle timeout from firing. A connection that has received bytes since its last request
     * ended (or since it opened), and has had no request handed to the handlers for longer than
     * the deadline, is mid-headers for that long: it gets a 408 (OpenAI's shape) and is closed.
     * Jetty's own types only: its parser is not exported to named modules.
     */
    static final class HeaderDeadline implements AutoCloseable {
        private final ServerConnector connector;
        private final long deadlineNanos;
        private final ScheduledExecutorService timer;
        /** Connections with a request in the handlers. */
        private final Set<Connection> active = ConcurrentHashMap.newKeySet();
        /** Per connection: bytes read when its last request ended. */
        private final Map<Connection, Long> marks = new ConcurrentHashMap<>();
        /** Per connection (the timer's thread only): when bytes past the mark were first seen. */
        private final Map<Connection, Long> since = new HashMap<>();

        HeaderDeadline(ServerConnector connector, long deadlineMillis) {
            this.connector = connector;
            this.deadlineNanos = TimeUnit.MILLISECONDS.toNanos(deadlineMillis);
            this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "phoenix-serve-header-deadline");
                t.setDaemon(true);
                return t;
            });
            long period = Math.max(50, Math.min(1000, deadlineMillis / 4));
            timer.scheduleWithFixedDelay(this::sweep, period, period, TimeUnit.MILLISECONDS);
        }

        /** The handler, with each request's connection marked busy until its callback completes. */
        Handler wrap(Handler inner) {
            return new Handler.Wrapper(inner) {
                @Override
                public boolean handle(Request request, Response response, Callback callback) throws Exception {
                    Connection c = request.getConnectionMetaData().getConnection();
                    active.add(c);
                    Callback done = new Callback() {
                        @Override
                        public void succeeded() {
                            end(c);
                            callback.succeeded();
                        }

                        @Override
                        public void failed(Throwable x) {
                            end(c);
                            callback.failed(x);
                        }

                        @Override
                        public InvocationType getInvocationType() {
                            return callback.getInvocationType();
                        }
                    };
                    try {
                        if (super.handle(request, response, done)) {
                            return true;
                        }
                    } catch (Exception | Error e) {
                        end(c);
                        throw e;
                    }
                    end(c);
                    return false;
                }
            };
        }

        private void end(Connection c) {
            marks.put(c, c.getBytesIn());
            active.remove(c);
        }

        private void sweep() {
            try {
                long now = System.nanoTime();
                Set<Connection> live = new HashSet<>();
                for (EndPoint ep : connector.getConnectedEndPoints()) {
                    Connection c = ep.getConnection();
                    if (c == null) {
                        continue;
                    }
                    live.add(c);
                    if (active.contains(c) || c.getBytesIn() <= marks.getOrDefault(c, 0L)) {
                        since.remove(c);
                        continue;
                    }
                    Long t = since.putIfAbsent(c, now);
                    if (t != null && now - t > deadlineNanos) {
                        since.remove(c);
                        timeOut(ep);
                    }
                }
                since.keySet().retainAll(live);
                marks.keySet().retainAll(live);
            } catch (RuntimeException e) {
                // a connection closing under the sweep: the next sweep sees the rest
            }
        }

        private static void timeOut(EndPoint ep) {
            byte[] body = OpenAiJson.bytes(OpenAiJson.errorNode("The request's line and headers took too long to"
                    + " arrive.", ApiException.INVALID_REQUEST, null, "request_timeout"));
            byte[] head = ("HTTP/1.1 408 Request Timeout\r\nContent-Type: " + Exchange.JSON + "\r\nContent-Length: "
                    + body.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
            ByteBuffer all = ByteBuffer.allocate(head.length + body.length).put(head).put(body).flip();
            try {
                ep.write(Callback.from(ep::close, x -> ep.close()), all);
            } catch (RuntimeException e) {
                ep.close();
            }
        }

        @Override
        public void close() {
            timer.shutdownNow();
        }
    }

    /** Jetty's own errors (a malformed request line, headers too large, 503 while draining) in OpenAI's shape. */
    static final class JsonErrorHandler extends ErrorHandler {
        /** Every method gets the JSON body (Jetty's default gives only GET, POST and HEAD one). */
        @Override
        public boolean errorPageForMethod(String method) {
            return true;
        }

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
