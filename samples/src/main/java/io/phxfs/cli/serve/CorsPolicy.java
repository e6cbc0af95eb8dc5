package io.phxfs.cli.serve;

import java.time.Duration;
import java.util.List;

/**
 * Which web pages on other origins may call the server from a browser (CORS), with vLLM's flags
 * ({@code --allowed-origins}, {@code --allowed-methods}, {@code --allowed-headers},
 * {@code --allow-credentials}) but a closed default: no origin, so that a page the user happens
 * to visit cannot read what a server on their machine answers. With origins, Jetty's
 * CrossOriginHandler ({@link CorsHandler}) answers each preflight itself (200, before the API
 * key is asked for: browsers never send it on a preflight) and adds {@code Access-Control-Allow-Origin} (the
 * request's origin) to the answers of an allowed origin, errors included. Names no Jetty type:
 * {@link ServeCommand} builds it before it checks that Jetty is there.
 *
 * @param origins exact origins ({@code https://chat.example.com}), or {@code *} for any; empty: CORS off
 * @param methods the methods a preflight allows
 * @param headers the request headers a preflight allows; with {@code *} a preflight is granted the
 *        headers it asks for, {@code Authorization} included, as vLLM's Starlette middleware grants them
 * @param credentials whether {@code Access-Control-Allow-Credentials: true} is sent
 */
record CorsPolicy(List<String> origins, List<String> methods, List<String> headers, boolean credentials) {
    /** The methods the API has, and the preflight's own. */
    static final List<String> DEFAULT_METHODS = List.of("GET", "POST", "HEAD", "OPTIONS");
    /** Any header; Authorization named, since {@code *} does not cover it. */
    static final List<String> DEFAULT_HEADERS = List.of("*", "Authorization");
    /** How long a browser may reuse a preflight's answer. */
    static final Duration MAX_AGE = Duration.ofMinutes(10);

    /**
     * Checks the values.
     *
     * @throws IllegalArgumentException naming the flag: an origin that is not scheme://host[:port], or
     *         credentials for any origin
     */
    CorsPolicy {
        origins = List.copyOf(origins);
        methods = methods == null || methods.isEmpty() ? DEFAULT_METHODS : List.copyOf(methods);
        headers = headers == null || headers.isEmpty() ? DEFAULT_HEADERS : List.copyOf(headers);
        if (headers.contains("*") && headers.stream().noneMatch(h -> h.equalsIgnoreCase("Authorization"))) {
            // vLLM's "*" lets the API key through (Starlette echoes what is asked); so does ours
            headers = java.util.stream.Stream.concat(headers.stream(), java.util.stream.Stream.of("Authorization")).toList();
        }
        for (String o : origins) {
            if (!o.equals("*") && !o.matches("(?i)[a-z][a-z0-9+.-]*://[^/?#\\s]+")) {
                throw new IllegalArgumentException("--allowed-origins " + o + ": an origin is scheme://host[:port]"
                        + " (no path, no trailing slash), or * for any");
            }
        }
        if (credentials && origins.contains("*")) {
            throw new IllegalArgumentException("--allow-credentials with --allowed-origins *: any web page could send"
                    + " the browser's credentials; name the origins");
        }
    }

    /** CORS off: no origin may read an answer from a browser. */
    static CorsPolicy none() {
        return new CorsPolicy(List.of(), null, null, false);
    }

    boolean enabled() {
        return !origins.isEmpty();
    }

    @Override
    public String toString() {
        return enabled() ? "CORS " + origins + (credentials ? " with credentials" : "") : "CORS off";
    }
}
