package io.phxfs.cli.serve;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What the server guards itself with: the API key (kept only as its SHA-256), whether
 * {@code /metrics} is open, the server-wide cache salt, and the limits against abusive clients.
 * Its {@link #toString} names no secret.
 *
 * @param keyDigest SHA-256 of the API key, or null when none is required
 * @param metricsPublic whether {@code /metrics} answers without the key
 * @param cacheSalt the server-wide salt mixed into every prefix-cache key, or null
 * @param maxBodyBytes the largest request body (413 past it)
 * @param maxConnections the most TCP connections at once (more wait in the kernel's accept queue)
 * @param idleTimeoutMillis a connection silent this long is closed (not while its generation runs)
 * @param headerTimeoutMillis a request whose line and headers take longer than this to arrive is cut
 * @param maxHeaderBytes the largest request line plus headers (431 past it)
 * @param cors which web pages on other origins may call the server from a browser
 */
record HttpPolicy(byte[] keyDigest, boolean metricsPublic, String cacheSalt, int maxBodyBytes, int maxConnections,
                  long idleTimeoutMillis, long headerTimeoutMillis, int maxHeaderBytes, CorsPolicy cors) {
    static final int DEFAULT_MAX_BODY_BYTES = 8 << 20;
    static final int DEFAULT_MAX_CONNECTIONS = 256;
    static final long DEFAULT_IDLE_MILLIS = 60_000;
    static final long DEFAULT_HEADER_MILLIS = 10_000;
    static final int DEFAULT_MAX_HEADER_BYTES = 16 << 10;
    /** JSON: the deepest nesting, the longest string (chars) and number (digits) a body may have. */
    static final int MAX_JSON_DEPTH = 64;
    static final int MAX_JSON_STRING = 4 << 20;
    static final int MAX_JSON_NUMBER = 100;

    /** No key, no salt, the default limits, CORS off. */
    static HttpPolicy defaults() {
        return new HttpPolicy(null, false, null, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
                DEFAULT_IDLE_MILLIS, DEFAULT_HEADER_MILLIS, DEFAULT_MAX_HEADER_BYTES, CorsPolicy.none());
    }

    HttpPolicy withCors(CorsPolicy c) {
        return new HttpPolicy(keyDigest, metricsPublic, cacheSalt, maxBodyBytes, maxConnections, idleTimeoutMillis,
                headerTimeoutMillis, maxHeaderBytes, c == null ? CorsPolicy.none() : c);
    }

    HttpPolicy withApiKey(String key) {
        return new HttpPolicy(key == null ? null : sha256(key), metricsPublic, cacheSalt, maxBodyBytes,
                maxConnections, idleTimeoutMillis, headerTimeoutMillis, maxHeaderBytes, cors);
    }

    HttpPolicy withMetricsPublic(boolean open) {
        return new HttpPolicy(keyDigest, open, cacheSalt, maxBodyBytes, maxConnections, idleTimeoutMillis,
                headerTimeoutMillis, maxHeaderBytes, cors);
    }

    HttpPolicy withCacheSalt(String salt) {
        return new HttpPolicy(keyDigest, metricsPublic, salt == null || salt.isEmpty() ? null : salt, maxBodyBytes,
                maxConnections, idleTimeoutMillis, headerTimeoutMillis, maxHeaderBytes, cors);
    }

    HttpPolicy withLimits(int body, int connections, long idleMillis, long headerMillis, int headerBytes) {
        return new HttpPolicy(keyDigest, metricsPublic, cacheSalt, body, connections, idleMillis, headerMillis,
                headerBytes, cors);
    }

    boolean keyRequired() {
        return keyDigest != null;
    }

    /** Whether an Authorization header's value is {@code Bearer KEY}; constant time in the token. */
    boolean authorized(String authorization) {
        if (keyDigest == null) {
            return true;
        }
        if (authorization == null || authorization.length() < 7
                || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        return MessageDigest.isEqual(keyDigest, sha256(authorization.substring(7).trim()));
    }

    /**
     * The salt the engine gets: the request's alone without a server salt; with one, a digest of
     * both (length-prefixed, so that no pair of salts collides with another).
     */
    String salt(String requestSalt) {
        if (cacheSalt == null) {
            return requestSalt;
        }
        String r = requestSalt == null ? "" : requestSalt;
        String both = cacheSalt.length() + ":" + cacheSalt + "|" + r.length() + ":" + r;
        return "srv-" + HexFormat.of().formatHex(sha256(both));
    }

    static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return "HttpPolicy[key " + (keyRequired() ? "required" : "none") + ", metricsPublic " + metricsPublic
                + ", cacheSalt " + (cacheSalt == null ? "none" : "set") + ", maxBodyBytes " + maxBodyBytes
                + ", maxConnections " + maxConnections + ", idleTimeoutMillis " + idleTimeoutMillis
                + ", headerTimeoutMillis " + headerTimeoutMillis + ", maxHeaderBytes " + maxHeaderBytes + ", " + cors + "]";
    }
}
