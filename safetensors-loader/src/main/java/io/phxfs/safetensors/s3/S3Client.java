package io.phxfs.safetensors.s3;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.LongConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.stream.XMLInputFactory;
import javax.xml.stream.XMLStreamConstants;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamReader;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;
import software.amazon.awssdk.identity.spi.AwsSessionCredentialsIdentity;
import software.amazon.awssdk.utils.http.SdkHttpUtils;

/**
 * The few S3 requests a loader needs (a ranged GET, a listing), over the JDK's HTTP client and
 * signed by the AWS SDK's SigV4 signer. A ranged GET's body is written straight into the
 * caller's memory segment as the client hands over its socket buffers: no byte[] per chunk,
 * no copy of the range. Thread-safe; one per {@link S3FileSystem}.
 */
final class S3Client implements AutoCloseable {
    /** An object's size and entity tag (null when the server gives none: files S3Proxy did not write). */
    record ObjectInfo(long size, String etag) {
    }

    /** The first bytes of an object, with what its answer said of the whole. */
    record Prefix(ObjectInfo info, byte[] bytes) {
    }

    /** One page (or several, joined) of a ListObjectsV2 answer. */
    record Listing(List<Entry> objects, List<String> commonPrefixes, boolean truncated) {
    }

    /** A listed object. */
    record Entry(String key, long size, String etag) {
    }

    /** Error bodies are read up to this; more is discarded (S3's are a few hundred bytes). */
    private static final int ERROR_BODY_LIMIT = 64 << 10;
    private static final Pattern CONTENT_RANGE = Pattern.compile("bytes (\\d+)-(\\d+)/(\\d+|\\*)");

    private final S3Settings settings;
    private final HttpClient http;
    private final AwsV4HttpSigner signer = AwsV4HttpSigner.create();
    private final AwsCredentialsIdentity identity;
    private volatile boolean closed;

    S3Client(S3Settings settings) {
        this.settings = settings;
        // HTTP/1.1 on purpose: S3 speaks nothing else, and parallel ranges want parallel
        // connections rather than streams multiplexed over one
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(settings.timeout()).followRedirects(HttpClient.Redirect.NEVER).build();
        if (!settings.hasCredentials()) {
            identity = null;
        } else if (settings.sessionToken() != null) {
            identity = AwsSessionCredentialsIdentity.create(settings.accessKeyId(), settings.secretAccessKey(),
                    settings.sessionToken());
        } else {
            identity = AwsCredentialsIdentity.create(settings.accessKeyId(), settings.secretAccessKey());
        }
    }

    S3Settings settings() {
        return settings;
    }

    static String url(String bucket, String key) {
        return "s3://" + bucket + "/" + key;
    }

    /**
     * The first {@code n} bytes of an object in one ranged GET (the speculative header read),
     * with its size and entity tag.
     *
     * @throws NoSuchFileException when the bucket holds no such key
     */
    Prefix getPrefix(String bucket, String key, int n) throws IOException {
        String url = url(bucket, key);
        return retrying(url, "GET", () -> {
            HttpResponse<byte[]> r = send(url, request("GET", bucket, key, Map.of(), Map.of("Range", "bytes=0-" + (n - 1))),
                    limited(n));
            if (r.statusCode() == 416) {
                // an empty object has no byte 0 to range over: S3 refuses the range, and a HEAD tells the size
                return new Prefix(headOnce(bucket, key), new byte[0]);
            }
            checkStatus(r, url, "GET", bucket, key);
            ObjectInfo info = info(r, url, r.statusCode() == 200
                    ? r.headers().firstValueAsLong("Content-Length").orElse(r.body().length) : -1);
            return new Prefix(info, r.body());
        });
    }

    /** The size and entity tag of an object. */
    ObjectInfo head(String bucket, String key) throws IOException {
        return retrying(url(bucket, key), "HEAD", () -> headOnce(bucket, key));
    }

    private ObjectInfo headOnce(String bucket, String key) throws IOException {
        String url = url(bucket, key);
        HttpResponse<byte[]> r = send(url, request("HEAD", bucket, key, Map.of(), Map.of()), limited(0));
        checkStatus(r, url, "HEAD", bucket, key);
        long size = r.headers().firstValueAsLong("Content-Length").orElse(-1);
        if (size < 0) {
            throw fatal(url, "HEAD", r.statusCode(), null, "the answer has no Content-Length", null);
        }
        return new ObjectInfo(size, r.headers().firstValue("ETag").orElse(null));
    }

    /**
     * Lists {@code prefix} with {@code delimiter}, following continuation tokens for at most
     * {@code maxPages} pages of up to 1,000 keys.
     */
    Listing list(String bucket, String prefix, String delimiter, int maxKeys, int maxPages) throws IOException {
        String url = url(bucket, prefix);
        List<Entry> objects = new ArrayList<>();
        List<String> prefixes = new ArrayList<>();
        String token = null;
        for (int page = 0; page < maxPages; page++) {
            Map<String, String> q = new java.util.LinkedHashMap<>();
            q.put("list-type", "2");
            q.put("prefix", prefix);
            if (delimiter != null) {
                q.put("delimiter", delimiter);
            }
            q.put("max-keys", Integer.toString(maxKeys));
            if (token != null) {
                q.put("continuation-token", token);
            }
            byte[] body = retrying(url, "LIST", () -> {
                HttpResponse<byte[]> r = send(url, request("GET", bucket, null, q, Map.of()), limited(64 << 20));
                checkStatus(r, url, "LIST", bucket, null);
                return r.body();
            });
            token = parseListing(body, url, objects, prefixes);
            if (token == null) {
                return new Listing(objects, prefixes, false);
            }
        }
        return new Listing(objects, prefixes, true);
    }

    /**
     * Reads {@code dest.byteSize()} bytes of the object from {@code offset} into {@code dest}:
     * ranged GETs, each retry resuming after the last byte that arrived, until all are there
     * or the tries are spent. {@code expected}'s size must be the object's (an object replaced
     * since its header was read fails, never mixes two versions: If-Match on its entity tag,
     * and every answer's total size checked). {@code onBytes} hears of each chunk written;
     * {@code abandoned} true stops the read (another range failed) with an InterruptedIOException.
     * On return or throw, nothing writes into {@code dest} any more.
     */
    void read(String bucket, String key, ObjectInfo expected, long offset, MemorySegment dest, LongConsumer onBytes,
              BooleanSupplier abandoned) throws IOException {
        String url = url(bucket, key);
        long length = dest.byteSize();
        long got = 0;
        S3Exception last = null;
        for (int attempt = 1; got < length; attempt++) {
            if (abandoned.getAsBoolean()) {
                throw new InterruptedIOException(url + ": read abandoned (another range of the load failed)");
            }
            long[] written = new long[1];
            try {
                readOnce(bucket, key, expected, offset + got, dest.asSlice(got), onBytes, abandoned, written);
                got += written[0];
                if (got < length) {
                    // the answer ended early without a transport error: retried like a reset
                    throw retryable(url, "GET", 0, null, "the body ended after " + written[0] + " of "
                            + (length - got + written[0]) + " bytes", null);
                }
            } catch (S3Exception e) {
                got += written[0];
                if (!e.retryable() || attempt >= settings.maxAttempts()) {
                    throw attempt > 1 ? again(e, attempt, last) : e;
                }
                last = e;
                pause(attempt, e);
            }
        }
    }

    private void readOnce(String bucket, String key, ObjectInfo expected, long from, MemorySegment dest,
                          LongConsumer onBytes, BooleanSupplier abandoned, long[] written) throws IOException {
        String url = url(bucket, key);
        long to = from + dest.byteSize() - 1;
        String range = "bytes " + from + "-" + to;
        Map<String, String> headers = new java.util.LinkedHashMap<>();
        headers.put("Range", "bytes=" + from + "-" + to);
        if (expected.etag() != null) {
            headers.put("If-Match", expected.etag());
        }
        HttpRequest req = request("GET", bucket, key, Map.of(), headers);
        SegmentSink sink = new SegmentSink(dest, onBytes);
        String[] refused = new String[1];
        byte[][] errorBody = new byte[1][];
        HttpResponse.BodyHandler<Long> handler = info -> {
            int s = info.statusCode();
            if (s == 206 || s == 200) {
                refused[0] = checkRange(info, from, to, expected.size());
                if (refused[0] == null) {
                    return sink;
                }
            }
            return HttpResponse.BodySubscribers.mapping(new Limited(ERROR_BODY_LIMIT), b -> {
                errorBody[0] = b;
                return -1L;
            });
        };
        CompletableFuture<HttpResponse<Long>> f;
        try {
            f = http.sendAsync(req, handler);
        } catch (RuntimeException e) {
            throw fatal(url, "GET", 0, null, "the request could not be sent: " + e, e);
        }
        HttpResponse<Long> r;
        try {
            r = await(f, sink, abandoned, url, range, req.uri());
        } finally {
            sink.close(); // from here on, nothing writes into dest
            written[0] = sink.written();
        }
        if (refused[0] != null) {
            throw fatal(url, "GET", r.statusCode(), null, range + ": " + refused[0], null);
        }
        if (r.statusCode() != 200 && r.statusCode() != 206) {
            throw fromStatus(r.statusCode(), r.headers(), errorBody[0], url, "GET " + range, bucket, key);
        }
    }

    /** Null when a 2xx answer to a ranged GET holds exactly the asked bytes of the expected object, else why not. */
    private static String checkRange(HttpResponse.ResponseInfo info, long from, long to, long size) {
        if (info.statusCode() == 200) {
            long len = info.headers().firstValueAsLong("Content-Length").orElse(-1);
            return from == 0 && len == size && to == size - 1 ? null
                    : "the server ignored the Range header (200 with the whole object, " + len + " bytes)";
        }
        String cr = info.headers().firstValue("Content-Range").orElse(null);
        Matcher m = cr == null ? null : CONTENT_RANGE.matcher(cr);
        if (m == null || !m.matches()) {
            return "206 without a valid Content-Range (" + cr + ")";
        }
        if (!m.group(3).equals("*") && Long.parseLong(m.group(3)) != size) {
            return "the object is now " + m.group(3) + " bytes, was " + size
                    + " when its header was read: it changed while loading";
        }
        if (Long.parseLong(m.group(1)) != from || Long.parseLong(m.group(2)) != to) {
            return "the server sent " + cr + " for the asked bytes " + from + "-" + to;
        }
        return null;
    }

    /**
     * Waits for the answer; fails it when no byte came for the timeout (the JDK client's own
     * timeout ends at the response headers) or when the load was abandoned.
     */
    private HttpResponse<Long> await(CompletableFuture<HttpResponse<Long>> f, SegmentSink sink,
                                     BooleanSupplier abandoned, String url, String range, java.net.URI target)
            throws IOException {
        long idleLimit = settings.timeout().toNanos();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get(100, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    if (abandoned.getAsBoolean()) {
                        sink.abort(new InterruptedIOException("abandoned"));
                        f.cancel(true);
                        throw new InterruptedIOException(url + ": read abandoned (another range of the load failed)");
                    }
                    if (sink.subscribed() && System.nanoTime() - sink.lastActivity() > idleLimit) {
                        HttpTimeoutException t = new HttpTimeoutException("no body bytes for " + settings.timeout().toSeconds() + " s");
                        sink.abort(t);
                        f.cancel(true);
                        throw retryable(url, "GET " + range, 0, null, "the body stalled: " + t.getMessage(), t);
                    }
                } catch (InterruptedException e) {
                    // the range must end before its memory can be freed: abandon it, and say so after
                    interrupted = true;
                    sink.abort(new InterruptedIOException("interrupted"));
                    f.cancel(true);
                    throw new InterruptedIOException(url + ": interrupted");
                } catch (ExecutionException e) {
                    throw transport(e.getCause(), url, "GET " + range, target);
                } catch (CancellationException e) {
                    throw new InterruptedIOException(url + ": cancelled");
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @FunctionalInterface
    private interface Call<T> {
        T run() throws IOException;
    }

    /** Runs {@code call}, trying again after retryable failures with backoff, at most maxAttempts times. */
    private <T> T retrying(String url, String what, Call<T> call) throws IOException {
        S3Exception last = null;
        for (int attempt = 1; ; attempt++) {
            try {
                return call.run();
            } catch (S3Exception e) {
                if (!e.retryable() || attempt >= settings.maxAttempts()) {
                    throw attempt > 1 ? again(e, attempt, last) : e;
                }
                last = e;
                pause(attempt, e);
            }
        }
    }

    /** The final failure of several tries, saying how many there were and what the one before said. */
    private static S3Exception again(S3Exception e, int attempts, S3Exception previous) {
        S3Exception out = new S3Exception(e.getMessage() + " (failed " + attempts + " tries" + (e.retryable()
                ? ": giving up" : "") + ")", e.url(), e.status(), e.code(), e.retryable(), e);
        if (previous != null && previous != e.getCause()) {
            out.addSuppressed(previous);
        }
        return out;
    }

    /** Full-jitter exponential backoff; a Retry-After the server sent raises the floor. */
    private void pause(int attempt, S3Exception e) throws InterruptedIOException {
        long base = settings.backoffBase().toNanos();
        long max = settings.backoffMax().toNanos();
        long ceiling = Math.min(max, base << Math.min(20, attempt - 1));
        long wait = ceiling <= 0 ? 0 : ThreadLocalRandom.current().nextLong(ceiling + 1);
        if (e instanceof RetryAfter ra) {
            wait = Math.min(max, Math.max(wait, ra.retryAfterNanos));
        }
        try {
            TimeUnit.NANOSECONDS.sleep(wait);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(e.url() + ": interrupted while waiting to try again");
        }
    }

    /** A retryable status whose answer asked for a pause of its own. */
    private static final class RetryAfter extends S3Exception {
        private static final long serialVersionUID = 1L;
        final long retryAfterNanos;

        RetryAfter(String message, String url, int status, String code, long nanos) {
            super(message, url, status, code, true, null);
            this.retryAfterNanos = nanos;
        }
    }

    private <T> HttpResponse<T> send(String url, HttpRequest req, HttpResponse.BodyHandler<T> handler) throws IOException {
        if (closed) {
            throw new IllegalStateException("the S3 file system of " + settings.endpointName() + " is closed");
        }
        try {
            return http.send(req, handler);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(url + ": interrupted");
        } catch (IOException e) {
            throw transport(e, url, req.method() + (req.headers().firstValue("Range").map(r -> " " + r).orElse("")), req.uri());
        }
    }

    /** A transport failure (reset, refused, early end, timeout) as a retryable S3Exception naming what failed. */
    private S3Exception transport(Throwable t, String url, String what, java.net.URI target) {
        if (t instanceof S3Exception s) {
            return s;
        }
        String why = t instanceof ConnectException ? "cannot connect to " + settings.endpointName() + " (" + connectReason(t, target) + ")"
                : t instanceof HttpTimeoutException ? "timed out after " + settings.timeout().toSeconds() + " s"
                : reason(t).equals(t.getClass().getSimpleName()) ? reason(t) : t.getClass().getSimpleName() + ": " + reason(t);
        return retryable(url, what, 0, null, mask(why), t);
    }

    /**
     * Why a connection failed. The JDK's HTTP client keeps the resolver's failure but drops the
     * OS's answer to the connect (refused, no route, timed out: a ConnectException around a
     * ClosedChannelException, neither with a message), so that one is asked again, once, with a
     * plain socket to the same host and port.
     */
    static String connectReason(Throwable t, java.net.URI target) {
        String why = reason(t);
        if (!why.equals(t.getClass().getSimpleName()) || target == null || target.getHost() == null) {
            return why;
        }
        java.net.ProxySelector proxies = java.net.ProxySelector.getDefault();
        java.util.List<java.net.Proxy> via = proxies == null ? java.util.List.of() : proxies.select(target);
        if (!via.isEmpty() && via.get(0).type() != java.net.Proxy.Type.DIRECT) {
            // the client went through a proxy: a direct probe would answer for another hop
            return "refused or unreachable through the proxy " + via.get(0).address();
        }
        int port = target.getPort() >= 0 ? target.getPort() : "https".equalsIgnoreCase(target.getScheme()) ? 443 : 80;
        try (java.net.Socket probe = new java.net.Socket()) {
            probe.connect(new java.net.InetSocketAddress(target.getHost(), port), 3000);
            return "the connection to " + target.getHost() + ":" + port + " closed as it opened";
        } catch (IOException e) {
            return target.getHost() + ":" + port + ": " + reason(e);
        }
    }

    /**
     * What the OS or the resolver said: the JDK's HTTP client wraps it (a ConnectException with no
     * message around "Connection refused", or around an UnresolvedAddressException with none).
     */
    static String reason(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof java.nio.channels.UnresolvedAddressException || c instanceof java.net.UnknownHostException) {
                return "its host name does not resolve" + (c.getMessage() == null ? "" : ": " + c.getMessage());
            }
            if (c.getMessage() != null && !c.getMessage().isBlank()) {
                return c.getMessage();
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return t.getClass().getSimpleName();
    }

    /** A signed request for {@code key} of {@code bucket} (the bucket itself when key is null). */
    private HttpRequest request(String method, String bucket, String key, Map<String, String> query,
                                Map<String, String> headers) {
        URI ep = settings.endpoint().orElse(null);
        String scheme = ep == null ? "https" : ep.getScheme();
        String base = ep == null ? "s3." + settings.region() + ".amazonaws.com" : ep.getHost();
        int port = ep == null ? -1 : ep.getPort();
        String basePath = ep == null || ep.getRawPath() == null ? "" : ep.getRawPath();
        String encodedKey = key == null ? "" : SdkHttpUtils.urlEncodeIgnoreSlashes(key);
        // a bucket name with dots breaks the TLS wildcard of virtual-hosted names: path-style then
        boolean pathStyle = settings.pathStyle() || "https".equals(scheme) && bucket.contains(".");
        String host = pathStyle ? base : bucket + "." + base;
        String path = pathStyle ? basePath + "/" + bucket + (key == null ? "" : "/" + encodedKey) : basePath + "/" + encodedKey;
        SdkHttpRequest.Builder b = SdkHttpRequest.builder().method(SdkHttpMethod.fromValue(method)).protocol(scheme)
                .host(host).encodedPath(path);
        if (port != -1) {
            b.port(port);
        }
        query.forEach(b::putRawQueryParameter);
        headers.forEach(b::putHeader);
        // the body of a GET is empty; S3 wants this header on every signed request
        b.putHeader("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
        SdkHttpRequest unsigned = b.build();
        SdkHttpRequest signed = identity == null ? unsigned : signer.sign(r -> r.identity(identity).request(unsigned)
                .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "s3")
                .putProperty(AwsV4HttpSigner.REGION_NAME, settings.region())
                // S3 signs the key as sent: no second encoding, no removal of '//' or '..'
                .putProperty(AwsV4HttpSigner.DOUBLE_URL_ENCODE, false)
                .putProperty(AwsV4HttpSigner.NORMALIZE_PATH, false)
                .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, false)).request();
        HttpRequest.Builder hb = HttpRequest.newBuilder(signed.getUri()).timeout(settings.timeout())
                .method(method, HttpRequest.BodyPublishers.noBody());
        signed.forEachHeader((name, values) -> {
            // the client writes Host itself, from the same URI the signature covers
            if (!name.equalsIgnoreCase("Host")) {
                for (String v : values) {
                    hb.header(name, v);
                }
            }
        });
        return hb.build();
    }

    private static ObjectInfo info(HttpResponse<?> r, String url, long wholeLength) throws S3Exception {
        String etag = r.headers().firstValue("ETag").orElse(null);
        if (wholeLength >= 0) {
            return new ObjectInfo(wholeLength, etag);
        }
        String cr = r.headers().firstValue("Content-Range").orElse("");
        Matcher m = CONTENT_RANGE.matcher(cr);
        if (!m.matches() || m.group(3).equals("*")) {
            throw fatal(url, "GET", r.statusCode(), null, "206 without the object's size in Content-Range ('" + cr + "')", null);
        }
        return new ObjectInfo(Long.parseLong(m.group(3)), etag);
    }

    /** Throws for a status other than 200/206: NoSuchFileException for a missing key, S3Exception otherwise. */
    private void checkStatus(HttpResponse<byte[]> r, String url, String what, String bucket, String key) throws IOException {
        int s = r.statusCode();
        if (s == 200 || s == 206) {
            return;
        }
        S3Exception e = fromStatus(s, r.headers(), r.body(), url, what, bucket, key);
        if (s == 404 && key != null && !"NoSuchBucket".equals(e.code())) {
            // not there: a model directory's lookups expect this, and the words of any missing file
            NoSuchFileException n = new NoSuchFileException(null, null, e.getMessage());
            n.initCause(e);
            throw n;
        }
        throw e;
    }

    /** The exception for an error answer: status, S3's code and message, what to do about it. */
    private S3Exception fromStatus(int status, HttpHeaders headers, byte[] body, String url, String what,
                                   String bucket, String key) {
        String[] err = parseError(body);
        String code = err[0];
        String message = err[1];
        String requestId = err[2] != null ? err[2] : headers.firstValue("x-amz-request-id").orElse(null);
        if (code == null) {
            // a HEAD has no body: the status says it
            code = switch (status) {
                case 404 -> key == null ? "NoSuchBucket" : "NoSuchKey";
                case 403 -> "AccessDenied";
                case 412 -> "PreconditionFailed";
                case 503 -> "SlowDown";
                default -> null;
            };
        }
        StringBuilder m = new StringBuilder(url).append(": ").append(what).append(" failed: HTTP ").append(status);
        if (code != null) {
            m.append(' ').append(code);
        }
        if (message != null && !message.isBlank()) {
            m.append(" (").append(message.strip()).append(')');
        }
        String hint = hint(status, code, headers, bucket);
        if (hint != null) {
            m.append("; ").append(hint);
        }
        m.append(" [endpoint ").append(settings.endpointName());
        if (requestId != null) {
            m.append(", request id ").append(requestId);
        }
        m.append(']');
        boolean retry = status == 500 || status == 502 || status == 503 || status == 504 || status == 429
                || "SlowDown".equals(code) || "InternalError".equals(code) || "RequestTimeout".equals(code);
        if (retry) {
            long after = headers.firstValueAsLong("Retry-After").orElse(0);
            return new RetryAfter(mask(m.toString()), url, status, code, TimeUnit.SECONDS.toNanos(Math.min(after, 60)));
        }
        return new S3Exception(mask(m.toString()), url, status, code, false, null);
    }

    /** {@code s} with this client's secret key and session token replaced by {@code ***}, wherever a server echoed them. */
    private String mask(String s) {
        for (String secret : new String[] {settings.secretAccessKey(), settings.sessionToken()}) {
            if (s != null && secret != null && !secret.isEmpty()) {
                s = s.replace(secret, "***");
            }
        }
        return s;
    }

    private String hint(int status, String code, HttpHeaders headers, String bucket) {
        if (status == 403 && !settings.hasCredentials()) {
            return "no credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE";
        }
        if ("InvalidAccessKeyId".equals(code) || "SignatureDoesNotMatch".equals(code)) {
            return "check the credentials (access key " + settings.redactedAccessKeyId() + " from "
                    + settings.credentialsSource() + ") and AWS_REGION (" + settings.region() + ")";
        }
        if (status == 403) {
            return "the credentials (access key " + settings.redactedAccessKeyId() + " from "
                    + settings.credentialsSource() + ") may not read it";
        }
        if ("NoSuchBucket".equals(code)) {
            return "no bucket '" + bucket + "' at this endpoint";
        }
        if (status == 412) {
            return "the object was replaced while loading (its ETag no longer matches): load it again";
        }
        if (status == 301 || status == 307 || "PermanentRedirect".equals(code) || "AuthorizationHeaderMalformed".equals(code)) {
            Optional<String> region = headers.firstValue("x-amz-bucket-region");
            return region.map(r -> "the bucket is in region " + r + ": set AWS_REGION=" + r)
                    .orElse("the bucket is in another region: set AWS_REGION");
        }
        return null;
    }

    static S3Exception retryable(String url, String what, int status, String code, String why, Throwable cause) {
        return new S3Exception(url + ": " + what + " failed: " + why, url, status, code, true, cause);
    }

    static S3Exception fatal(String url, String what, int status, String code, String why, Throwable cause) {
        return new S3Exception(url + ": " + what + " failed: " + why, url, status, code, false, cause);
    }

    private static XMLInputFactory xml() {
        XMLInputFactory f = XMLInputFactory.newFactory();
        // a server's answer is data: no DTD, no entity reaching for files or hosts
        f.setProperty(XMLInputFactory.SUPPORT_DTD, false);
        f.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, false);
        return f;
    }

    /** {Code, Message, RequestId} of an S3 error document; nulls where absent or unparseable. */
    private static String[] parseError(byte[] body) {
        String[] out = new String[3];
        if (body == null || body.length == 0) {
            return out;
        }
        try {
            XMLStreamReader r = xml().createXMLStreamReader(new ByteArrayInputStream(body));
            String field = null;
            StringBuilder text = new StringBuilder();
            int depth = 0;
            while (r.hasNext()) {
                int ev = r.next();
                if (ev == XMLStreamConstants.START_ELEMENT) {
                    depth++;
                    field = depth == 2 ? r.getLocalName() : null;
                    text.setLength(0);
                } else if (ev == XMLStreamConstants.CHARACTERS && field != null) {
                    text.append(r.getText());
                } else if (ev == XMLStreamConstants.END_ELEMENT) {
                    if (depth == 2 && field != null) {
                        switch (field) {
                            case "Code" -> out[0] = text.toString();
                            case "Message" -> out[1] = text.toString();
                            case "RequestId" -> out[2] = text.toString();
                            default -> {
                            }
                        }
                    }
                    field = null;
                    depth--;
                }
            }
        } catch (XMLStreamException | RuntimeException e) {
            // not S3's XML (a proxy's HTML page): the status alone then
        }
        if (out[1] != null && out[1].length() > 300) {
            out[1] = out[1].substring(0, 300) + "...";
        }
        return out;
    }

    /** Adds a ListObjectsV2 page's keys and common prefixes; returns its continuation token, or null at the end. */
    private static String parseListing(byte[] body, String url, List<Entry> objects, List<String> prefixes) throws S3Exception {
        try {
            XMLStreamReader r = xml().createXMLStreamReader(new ByteArrayInputStream(body));
            List<String> path = new ArrayList<>();
            StringBuilder text = new StringBuilder();
            String key = null;
            long size = -1;
            String etag = null;
            String token = null;
            boolean truncated = false;
            while (r.hasNext()) {
                int ev = r.next();
                if (ev == XMLStreamConstants.START_ELEMENT) {
                    path.add(r.getLocalName());
                    text.setLength(0);
                } else if (ev == XMLStreamConstants.CHARACTERS) {
                    text.append(r.getText());
                } else if (ev == XMLStreamConstants.END_ELEMENT) {
                    String name = path.remove(path.size() - 1);
                    String parent = path.isEmpty() ? "" : path.get(path.size() - 1);
                    String v = text.toString();
                    switch (parent + "/" + name) {
                        case "Contents/Key" -> key = v;
                        case "Contents/Size" -> size = Long.parseLong(v.trim());
                        case "Contents/ETag" -> etag = v;
                        case "CommonPrefixes/Prefix" -> prefixes.add(v);
                        case "ListBucketResult/IsTruncated" -> truncated = v.trim().equals("true");
                        case "ListBucketResult/NextContinuationToken" -> token = v;
                        case "ListBucketResult/Contents" -> {
                            if (key != null && size >= 0) {
                                objects.add(new Entry(key, size, etag));
                            }
                            key = null;
                            size = -1;
                            etag = null;
                        }
                        default -> {
                        }
                    }
                    text.setLength(0);
                }
            }
            return truncated && token != null && !token.isEmpty() ? token : null;
        } catch (XMLStreamException | RuntimeException e) {
            throw fatal(url, "LIST", 200, null, "the listing is not ListObjectsV2 XML: " + e.getMessage(), e);
        }
    }

    /** At most {@code limit} bytes of a body into a byte[]; the rest is read and dropped. */
    private static HttpResponse.BodyHandler<byte[]> limited(int limit) {
        return info -> new Limited(Math.max(limit, info.statusCode() / 100 == 2 ? 0 : ERROR_BODY_LIMIT));
    }

    private static final class Limited implements BodySubscriber<byte[]> {
        private final int limit;
        private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        private final CompletableFuture<byte[]> result = new CompletableFuture<>();
        private Flow.Subscription subscription;

        Limited(int limit) {
            this.limit = limit;
        }

        @Override
        public CompletableFuture<byte[]> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            for (ByteBuffer b : items) {
                int n = Math.min(b.remaining(), limit - out.size());
                if (n > 0) {
                    byte[] chunk = new byte[n];
                    b.get(chunk);
                    out.write(chunk, 0, n);
                }
            }
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            result.complete(out.toByteArray());
        }
    }

    /**
     * A body written into the destination as it arrives: each buffer the client hands over is
     * copied once, into place. One chunk is asked for at a time, so the client holds no more
     * than a socket buffer or two of this body. After {@link #close} nothing is written, so
     * the destination may be freed.
     */
    private static final class SegmentSink implements BodySubscriber<Long> {
        private final MemorySegment dest;
        private final LongConsumer onBytes;
        private final CompletableFuture<Long> result = new CompletableFuture<>();
        private Flow.Subscription subscription;
        private long written;
        private boolean closed;
        private volatile long lastActivity = System.nanoTime();
        private volatile boolean subscribed;

        SegmentSink(MemorySegment dest, LongConsumer onBytes) {
            this.dest = dest;
            this.onBytes = onBytes;
        }

        @Override
        public CompletableFuture<Long> getBody() {
            return result;
        }

        @Override
        public synchronized void onSubscribe(Flow.Subscription s) {
            if (closed) {
                s.cancel();
                return;
            }
            subscription = s;
            lastActivity = System.nanoTime();
            subscribed = true;
            s.request(1);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            long n = 0;
            synchronized (this) {
                if (closed) {
                    return;
                }
                for (ByteBuffer b : items) {
                    int r = b.remaining();
                    if (written + r > dest.byteSize()) {
                        closed = true;
                        subscription.cancel();
                        result.completeExceptionally(new IOException("the body is longer than the "
                                + dest.byteSize() + " bytes asked for"));
                        return;
                    }
                    MemorySegment.copy(MemorySegment.ofBuffer(b), 0, dest, written, r);
                    written += r;
                    n += r;
                }
                lastActivity = System.nanoTime();
            }
            if (n > 0) {
                onBytes.accept(n);
            }
            subscription.request(1);
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            synchronized (this) {
                result.complete(written);
            }
        }

        synchronized long written() {
            return written;
        }

        long lastActivity() {
            return lastActivity;
        }

        boolean subscribed() {
            return subscribed;
        }

        void abort(IOException why) {
            synchronized (this) {
                closed = true;
                if (subscription != null) {
                    subscription.cancel();
                }
            }
            result.completeExceptionally(why);
        }

        synchronized void close() {
            closed = true;
        }
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        http.shutdownNow();
    }

    @Override
    public String toString() {
        return "S3Client[" + settings + "]";
    }

}
