package io.phxfs.cli.serve;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Sends each request to its endpoint by path and method, and answers what matches none in
 * OpenAI's error shape: 404 for an unknown path, 405 (with Allow) for a wrong method, 415 for a
 * POST whose body is not declared JSON, 500 for an endpoint's unexpected failure. A blocking
 * handler: Jetty calls it on a virtual thread.
 */
final class Router extends Handler.Abstract {
    /** An endpoint at a path (or under a path prefix) for some methods. */
    record Route(String path, boolean prefix, Set<String> methods, Endpoint endpoint) {
        boolean matches(String p) {
            return prefix ? p.startsWith(path) && p.length() > path.length() : p.equals(path);
        }
    }

    private final List<Route> routes;
    private final PrintWriter log;
    private final HttpPolicy policy;

    Router(List<Route> routes, PrintWriter log, HttpPolicy policy) {
        this.routes = List.copyOf(routes);
        this.log = log;
        this.policy = policy;
    }

    /**
     * With an API key, every request needs it (unknown paths too, so that none is probed) but
     * {@code /health}, and {@code /metrics} when public: 401 in OpenAI's shape, which never echoes
     * what the client sent.
     */
    private void authorize(Exchange ex, String path) {
        if (!policy.keyRequired() || path.equals("/health") || (policy.metricsPublic() && path.equals("/metrics"))) {
            return;
        }
        String auth = ex.header(HttpHeader.AUTHORIZATION);
        if (policy.authorized(auth)) {
            return;
        }
        ex.header(HttpHeader.WWW_AUTHENTICATE, "Bearer");
        throw new ApiException(401, ApiException.AUTHENTICATION, auth == null || auth.isBlank()
                ? "You didn't provide an API key. You need to provide your API key in an Authorization header using"
                        + " Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                : "Incorrect API key provided. The server's key is set with --api-key or PHOENIX_API_KEY.",
                null, "invalid_api_key");
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        Exchange ex = new Exchange(request, response, callback);
        try {
            route(ex);
        } catch (ApiException e) {
            ex.sendError(e);
        } catch (InterruptedException e) {
            // the server stops without waiting any longer
            ex.fail(e);
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            synchronized (log) {
                log.println("phoenix serve: " + ex.method() + " " + ex.path() + ": " + StreamBridge.message(t));
                t.printStackTrace(log);
                log.flush();
            }
            if (ex.committed()) {
                ex.fail(t);
            } else {
                ex.sendError(new ApiException(500, ApiException.SERVER_ERROR,
                        "The server had an error while processing your request: " + StreamBridge.message(t),
                        null, null));
            }
        } finally {
            if (!ex.completed()) {
                // an endpoint that returned without answering: a bug, but never a hung client
                ex.fail(new IllegalStateException(ex.method() + " " + ex.path() + " was not answered"));
            }
        }
        return true;
    }

    private void route(Exchange ex) throws Exception {
        String path = ex.path() == null ? "/" : ex.path();
        // /v1/models/ is /v1/models (vLLM redirects it; answered here, a POST too)
        if (path.length() > 1 && path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        String method = ex.method();
        authorize(ex, path);
        List<String> allowed = new ArrayList<>();
        for (Route r : routes) {
            if (!r.matches(path)) {
                continue;
            }
            if (!r.methods().contains(method) && !(method.equals("HEAD") && r.methods().contains("GET"))) {
                allowed.addAll(r.methods());
                continue;
            }
            if (method.equals("POST")) {
                checkJson(ex);
            }
            r.endpoint().handle(ex);
            return;
        }
        if (!allowed.isEmpty()) {
            ex.header(HttpHeader.ALLOW, String.join(", ", allowed));
            throw new ApiException(405, ApiException.INVALID_REQUEST, "Method " + method + " is not allowed for "
                    + path + "; use " + String.join(" or ", allowed) + ".", null, "method_not_allowed");
        }
        // OpenAI's words and code (none) for a path it does not have
        throw new ApiException(404, ApiException.INVALID_REQUEST, "Invalid URL (" + method + " " + path + ")",
                null, null);
    }

    /** 415 unless the body is declared JSON ({@code application/json}, any {@code +json}); none is taken as JSON. */
    private static void checkJson(Exchange ex) {
        String ct = ex.header(HttpHeader.CONTENT_TYPE);
        if (ct == null || ct.isBlank()) {
            return;
        }
        String type = ct.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
        if (!type.equals("application/json") && !type.endsWith("+json")) {
            throw new ApiException(415, ApiException.INVALID_REQUEST, "Unsupported Content-Type " + ct
                    + ": the body must be JSON, sent as application/json (curl: -H 'Content-Type: application/json').",
                    null, "unsupported_media_type");
        }
    }
}
