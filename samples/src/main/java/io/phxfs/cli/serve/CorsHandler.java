package io.phxfs.cli.serve;

import java.util.Set;
import java.util.regex.Pattern;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.handler.CrossOriginHandler;

/** {@link CorsPolicy} as Jetty's {@link CrossOriginHandler}. */
final class CorsHandler {
    private CorsHandler() {
    }

    /** {@code inner} behind Jetty's CORS handler, or {@code inner} itself when CORS is off. */
    static Handler wrap(CorsPolicy policy, Handler inner) {
        if (!policy.enabled()) {
            return inner;
        }
        CrossOriginHandler cors = new CrossOriginHandler();
        // Jetty's are regular expressions; the flag takes origins as vLLM's does, exactly
        cors.setAllowedOriginPatterns(Set.copyOf(policy.origins().stream()
                .map(o -> o.equals("*") ? o : Pattern.quote(o)).toList()));
        cors.setAllowedMethods(Set.copyOf(policy.methods()));
        cors.setAllowedHeaders(Set.copyOf(policy.headers()));
        cors.setAllowCredentials(policy.credentials());
        // a 429's Retry-After, for clients that back off
        cors.setExposedHeaders(Set.of("Retry-After"));
        cors.setPreflightMaxAge(CorsPolicy.MAX_AGE);
        cors.setHandler(inner);
        // a wildcard's preflights are answered with the headers asked for (Jetty would send "*" itself)
        return policy.headers().contains("*") ? new WildcardHeadersPreflight(policy, cors) : cors;
    }
}
