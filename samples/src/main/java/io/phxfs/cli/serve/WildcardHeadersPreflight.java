package io.phxfs.cli.serve;

import java.util.stream.Collectors;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * The preflights of a policy whose allowed headers are {@code *}, answered with the headers the
 * browser asked for, as Starlette's CORS middleware (vLLM's) answers them. Jetty's handler sends
 * the configured list as it is, and a literal {@code *} fails two ways: with credentials the fetch
 * standard reads it as a header named {@code *} (so {@code Content-Type} is not allowed and every
 * JSON POST fails), and without them it never covers {@code Authorization}. Preflights of origins
 * the policy does not allow, and every other request, go on to Jetty's handler.
 */
final class WildcardHeadersPreflight extends Handler.Wrapper {
    private final CorsPolicy policy;

    WildcardHeadersPreflight(CorsPolicy policy, Handler inner) {
        super(inner);
        this.policy = policy;
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
        String origin = request.getHeaders().get(HttpHeader.ORIGIN);
        String method = request.getHeaders().get(HttpHeader.ACCESS_CONTROL_REQUEST_METHOD);
        if (!HttpMethod.OPTIONS.is(request.getMethod()) || origin == null || method == null || !allowed(origin)) {
            return super.handle(request, response, callback);
        }
        var h = response.getHeaders();
        h.put(HttpHeader.ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.add(HttpHeader.VARY, "Origin");
        h.put(HttpHeader.ACCESS_CONTROL_ALLOW_METHODS, String.join(",", policy.methods()));
        String asked = request.getHeaders().get(HttpHeader.ACCESS_CONTROL_REQUEST_HEADERS);
        String named = policy.headers().stream().filter(x -> !x.equals("*")).collect(Collectors.joining(","));
        String grant = asked == null || asked.isBlank() ? named : named.isEmpty() ? asked : asked + "," + named;
        if (!grant.isEmpty()) {
            h.put(HttpHeader.ACCESS_CONTROL_ALLOW_HEADERS, grant);
        }
        if (policy.credentials()) {
            h.put(HttpHeader.ACCESS_CONTROL_ALLOW_CREDENTIALS, "true");
        }
        h.put(HttpHeader.ACCESS_CONTROL_MAX_AGE, Long.toString(CorsPolicy.MAX_AGE.toSeconds()));
        response.setStatus(200);
        callback.succeeded();
        return true;
    }

    private boolean allowed(String origin) {
        return policy.origins().contains("*") || policy.origins().contains(origin);
    }
}
