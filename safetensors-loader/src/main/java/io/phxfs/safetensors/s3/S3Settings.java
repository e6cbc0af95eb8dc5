package io.phxfs.safetensors.s3;

import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;
import software.amazon.awssdk.profiles.Profile;
import software.amazon.awssdk.profiles.ProfileFile;

/**
 * Where and how objects of {@code s3://} URLs are read: the endpoint, region and credentials,
 * found by the AWS conventions ({@link #fromEnvironment()}), and the reader's concurrency,
 * range size and retries. Immutable; {@link #toString()} never shows the secret key or the
 * session token, and shows only the first four characters of the access key id.
 */
public final class S3Settings {
    /** Parallel ranged GETs by default: enough to fill a 10-25 Gbit/s link from S3 at 8 MiB each. */
    public static final int DEFAULT_CONCURRENCY = 16;
    /** Bytes per ranged GET by default: Run:ai's streamer and AWS' own guidance use 8-16 MiB. */
    public static final long DEFAULT_RANGE_BYTES = 8L << 20;
    /** Tries per request (the first one included) before a retryable failure is given up on. */
    public static final int DEFAULT_MAX_ATTEMPTS = 6;
    /** Bytes of the speculative first GET of each object: the 8-byte length and, nearly always, the header. */
    public static final int DEFAULT_HEADER_PREFETCH_BYTES = 64 << 10;

    private final URI endpoint;
    private final String region;
    private final boolean pathStyle;
    private final String accessKeyId;
    private final String secretAccessKey;
    private final String sessionToken;
    private final String credentialsSource;
    private final int concurrency;
    private final long rangeBytes;
    private final int maxAttempts;
    private final Duration backoffBase;
    private final Duration backoffMax;
    private final Duration timeout;
    private final int headerPrefetchBytes;

    private S3Settings(Builder b) {
        this.endpoint = b.endpoint;
        this.region = b.region == null || b.region.isBlank() ? "us-east-1" : b.region;
        this.pathStyle = b.pathStyle != null ? b.pathStyle : b.endpoint != null;
        this.accessKeyId = b.accessKeyId;
        this.secretAccessKey = b.secretAccessKey;
        this.sessionToken = b.sessionToken;
        this.credentialsSource = b.accessKeyId == null ? "none (anonymous requests)"
                : b.credentialsSource == null ? "given" : b.credentialsSource;
        this.concurrency = b.concurrency;
        this.rangeBytes = b.rangeBytes;
        this.maxAttempts = b.maxAttempts;
        this.backoffBase = b.backoffBase;
        this.backoffMax = b.backoffMax;
        this.timeout = b.timeout;
        this.headerPrefetchBytes = b.headerPrefetchBytes;
    }

    /**
     * A builder with the defaults: AWS' own endpoints, us-east-1, no credentials.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder holding these settings.
     *
     * @return a new builder with these settings
     */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.endpoint = endpoint;
        b.region = region;
        b.pathStyle = pathStyle;
        b.accessKeyId = accessKeyId;
        b.secretAccessKey = secretAccessKey;
        b.sessionToken = sessionToken;
        b.credentialsSource = credentialsSource;
        b.concurrency = concurrency;
        b.rangeBytes = rangeBytes;
        b.maxAttempts = maxAttempts;
        b.backoffBase = backoffBase;
        b.backoffMax = backoffMax;
        b.timeout = timeout;
        b.headerPrefetchBytes = headerPrefetchBytes;
        return b;
    }

    /**
     * The settings of this process by the AWS conventions, each first found winning:
     * <ul>
     *   <li>endpoint: {@code AWS_ENDPOINT_URL_S3}, {@code AWS_ENDPOINT_URL} (or the system
     *       properties {@code aws.endpointUrlS3}, {@code aws.endpointUrl}), the profile's
     *       {@code endpoint_url}; else AWS. A custom endpoint is addressed path-style
     *       ({@code http://host:port/bucket/key});</li>
     *   <li>region: {@code aws.region}, {@code AWS_REGION}, {@code AWS_DEFAULT_REGION}, the
     *       profile's {@code region}; else us-east-1;</li>
     *   <li>credentials: {@code aws.accessKeyId}/{@code aws.secretAccessKey}/{@code aws.sessionToken},
     *       {@code AWS_ACCESS_KEY_ID}/{@code AWS_SECRET_ACCESS_KEY}/{@code AWS_SESSION_TOKEN}, then
     *       the profile {@code AWS_PROFILE} (or {@code aws.profile}, else {@code default}) of
     *       {@code ~/.aws/credentials} and {@code ~/.aws/config} ({@code AWS_SHARED_CREDENTIALS_FILE},
     *       {@code AWS_CONFIG_FILE} move them); else anonymous requests;</li>
     *   <li>the reader: {@code PHX_S3_CONCURRENCY} (parallel GETs, default 16),
     *       {@code PHX_S3_RANGE_MB} (MiB per GET, default 8), {@code PHX_S3_MAX_ATTEMPTS}
     *       (default 6), or the system properties {@code phx.s3.concurrency},
     *       {@code phx.s3.rangeMb}, {@code phx.s3.maxAttempts}.</li>
     * </ul>
     * Nothing here asks the network: unlike the SDK's default chains, no instance metadata
     * service is tried.
     *
     * @return the settings
     * @throws IllegalArgumentException for a malformed value (an endpoint that is no http(s)
     *                                  URL, a concurrency that is no number...), naming the variable
     */
    public static S3Settings fromEnvironment() {
        return fromEnvironment(System.getenv(), System.getProperties());
    }

    /** {@link #fromEnvironment()} over the given variables and properties. */
    static S3Settings fromEnvironment(Map<String, String> env, Properties props) {
        Function<String, String> envOf = k -> blankToNull(env.get(k));
        Function<String, String> propOf = k -> blankToNull(props.getProperty(k));
        String profileName = first(propOf.apply("aws.profile"), envOf.apply("AWS_PROFILE"), "default");
        Profile profile = profile(env, props, profileName);
        Builder b = builder();

        String endpoint = null;
        String endpointFrom = null;
        for (String[] kv : new String[][] {{"aws.endpointUrlS3", propOf.apply("aws.endpointUrlS3")},
                {"aws.endpointUrl", propOf.apply("aws.endpointUrl")},
                {"AWS_ENDPOINT_URL_S3", envOf.apply("AWS_ENDPOINT_URL_S3")},
                {"AWS_ENDPOINT_URL", envOf.apply("AWS_ENDPOINT_URL")}}) {
            if (kv[1] != null) {
                endpoint = kv[1];
                endpointFrom = kv[0];
                break;
            }
        }
        if (endpoint == null && profile != null) {
            endpoint = blankToNull(profile.property("endpoint_url").orElse(null));
            endpointFrom = "endpoint_url of profile '" + profileName + "'";
        }
        if (endpoint != null) {
            b.endpoint(parseEndpoint(endpoint, endpointFrom));
        }
        b.region(first(propOf.apply("aws.region"), envOf.apply("AWS_REGION"), envOf.apply("AWS_DEFAULT_REGION"),
                profile == null ? null : blankToNull(profile.property("region").orElse(null)), "us-east-1"));

        String ak = propOf.apply("aws.accessKeyId");
        String sk = propOf.apply("aws.secretAccessKey");
        if (ak != null && sk != null) {
            b.credentials(ak, sk, propOf.apply("aws.sessionToken"));
            b.credentialsSource = "system properties aws.accessKeyId/aws.secretAccessKey";
        } else if (envOf.apply("AWS_ACCESS_KEY_ID") != null && envOf.apply("AWS_SECRET_ACCESS_KEY") != null) {
            b.credentials(envOf.apply("AWS_ACCESS_KEY_ID"), envOf.apply("AWS_SECRET_ACCESS_KEY"),
                    envOf.apply("AWS_SESSION_TOKEN"));
            b.credentialsSource = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY";
        } else if (profile != null && profile.property("aws_access_key_id").isPresent()
                && profile.property("aws_secret_access_key").isPresent()) {
            b.credentials(profile.property("aws_access_key_id").get(), profile.property("aws_secret_access_key").get(),
                    profile.property("aws_session_token").orElse(null));
            b.credentialsSource = "profile '" + profileName + "'";
        }

        b.concurrency(intSetting(env, props, "PHX_S3_CONCURRENCY", "phx.s3.concurrency", DEFAULT_CONCURRENCY));
        b.rangeBytes((long) intSetting(env, props, "PHX_S3_RANGE_MB", "phx.s3.rangeMb",
                (int) (DEFAULT_RANGE_BYTES >> 20)) << 20);
        b.maxAttempts(intSetting(env, props, "PHX_S3_MAX_ATTEMPTS", "phx.s3.maxAttempts", DEFAULT_MAX_ATTEMPTS));
        return b.build();
    }

    /**
     * The profile of this name from the config and credentials files, the credentials file
     * winning where both set a property (as the SDK merges them); null when neither file has it.
     */
    private static Profile profile(Map<String, String> env, Properties props, String name) {
        String home = props.getProperty("user.home", "");
        Path config = Path.of(first(blankToNull(props.getProperty("aws.configFile")), blankToNull(env.get("AWS_CONFIG_FILE")),
                home + "/.aws/config"));
        Path credentials = Path.of(first(blankToNull(props.getProperty("aws.sharedCredentialsFile")),
                blankToNull(env.get("AWS_SHARED_CREDENTIALS_FILE")), home + "/.aws/credentials"));
        ProfileFile.Aggregator agg = ProfileFile.aggregator();
        boolean any = false;
        if (Files.isRegularFile(config)) {
            agg.addFile(ProfileFile.builder().content(config).type(ProfileFile.Type.CONFIGURATION).build());
            any = true;
        }
        if (Files.isRegularFile(credentials)) {
            agg.addFile(ProfileFile.builder().content(credentials).type(ProfileFile.Type.CREDENTIALS).build());
            any = true;
        }
        if (!any) {
            return null;
        }
        try {
            return agg.build().profile(name).orElse(null);
        } catch (UncheckedIOException | IllegalStateException e) {
            // the profile parser's message may quote the line it stopped at (aws_secret_access_key = ...):
            // scrubbed, and its exception not attached
            throw new IllegalArgumentException("AWS profile files " + config + ", " + credentials + ": " + S3Exception.scrub(e.getMessage()));
        }
    }

    private static URI parseEndpoint(String s, String from) {
        URI u;
        String shown = redactUrl(s);
        try {
            u = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
        } catch (IllegalArgumentException e) {
            // URISyntaxException's message quotes the whole input: its reason and index only
            String why = e.getCause() instanceof java.net.URISyntaxException x ? x.getReason() + " at index " + x.getIndex() : "malformed";
            throw new IllegalArgumentException(from + ": '" + shown + "' is not a URL: " + why);
        }
        String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https") || u.getHost() == null) {
            throw new IllegalArgumentException(from + ": '" + shown + "' is not an http:// or https:// URL with a host");
        }
        if (u.getRawQuery() != null || u.getUserInfo() != null) {
            throw new IllegalArgumentException(from + ": '" + shown + "': an endpoint has no query or user part");
        }
        return u;
    }

    /**
     * An endpoint as messages may show it: the user part ({@code https://key:secret@host}) and
     * the query (a presigned URL's {@code X-Amz-Signature=...}) become {@code ***}.
     */
    static String redactUrl(String s) {
        if (s == null) {
            return null;
        }
        int q = s.indexOf('?');
        int h = s.indexOf('#');
        int cut = q < 0 ? h : h < 0 ? q : Math.min(q, h);
        String out = cut < 0 ? s : s.substring(0, cut) + s.charAt(cut) + "***";
        int sep = out.indexOf("://");
        int from = sep < 0 ? 0 : sep + 3;
        int slash = out.indexOf('/', from);
        int end = slash < 0 ? (cut < 0 ? out.length() : cut) : slash;
        int at = out.lastIndexOf('@', Math.min(end, out.length()) - 1);
        if (at >= from) {
            out = out.substring(0, from) + "***" + out.substring(at);
        }
        return S3Exception.scrub(out);
    }

    private static int intSetting(Map<String, String> env, Properties props, String var, String prop, int dflt) {
        String p = blankToNull(props.getProperty(prop));
        String v = p != null ? p : blankToNull(env.get(var));
        if (v == null) {
            return dflt;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException((p != null ? prop : var) + ": '" + v + "' is not a whole number");
        }
    }

    @SafeVarargs
    private static <T> T first(T... values) {
        for (T v : values) {
            if (v != null) {
                return v;
            }
        }
        return null;
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }

    /** Options of {@link S3Settings}. */
    public static final class Builder {
        private URI endpoint;
        private String region = "us-east-1";
        private Boolean pathStyle;
        private String accessKeyId;
        private String secretAccessKey;
        private String sessionToken;
        private String credentialsSource;
        private int concurrency = DEFAULT_CONCURRENCY;
        private long rangeBytes = DEFAULT_RANGE_BYTES;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration backoffBase = Duration.ofMillis(100);
        private Duration backoffMax = Duration.ofSeconds(5);
        private Duration timeout = Duration.ofSeconds(30);
        private int headerPrefetchBytes = DEFAULT_HEADER_PREFETCH_BYTES;

        private Builder() {
        }

        /**
         * An S3-compatible server instead of AWS, e.g. {@code http://127.0.0.1:9000}; addressed
         * path-style unless {@link #pathStyle(boolean)} says otherwise.
         *
         * @param endpoint an http or https URL, or null for AWS
         * @return this builder
         */
        public Builder endpoint(URI endpoint) {
            this.endpoint = endpoint == null ? null : parseEndpoint(endpoint.toString(), "endpoint");
            return this;
        }

        /**
         * The region requests are signed for (and, on AWS, sent to).
         *
         * @param region e.g. {@code eu-west-1}
         * @return this builder
         */
        public Builder region(String region) {
            this.region = Objects.requireNonNull(region, "region");
            return this;
        }

        /**
         * Path-style ({@code endpoint/bucket/key}) or virtual-hosted ({@code bucket.endpoint/key})
         * addressing; by default path-style for a custom endpoint, virtual-hosted on AWS.
         *
         * @param pathStyle true for path-style addressing
         * @return this builder
         */
        public Builder pathStyle(boolean pathStyle) {
            this.pathStyle = pathStyle;
            return this;
        }

        /**
         * Static credentials; null keys for anonymous requests.
         *
         * @param accessKeyId the access key id, or null
         * @param secretAccessKey the secret access key, or null
         * @param sessionToken the session token of temporary credentials, or null
         * @return this builder
         */
        public Builder credentials(String accessKeyId, String secretAccessKey, String sessionToken) {
            if ((accessKeyId == null) != (secretAccessKey == null)) {
                throw new IllegalArgumentException("credentials: an access key id needs its secret key, and the other way round");
            }
            this.accessKeyId = accessKeyId;
            this.secretAccessKey = secretAccessKey;
            this.sessionToken = sessionToken;
            this.credentialsSource = null;
            return this;
        }

        /**
         * Ranged GETs in flight at once for a load (and the most bytes staged for a device:
         * concurrency x range size).
         *
         * @param concurrency 1..256
         * @return this builder
         */
        public Builder concurrency(int concurrency) {
            if (concurrency < 1 || concurrency > 256) {
                throw new IllegalArgumentException("S3 concurrency must be 1..256, was " + concurrency);
            }
            this.concurrency = concurrency;
            return this;
        }

        /**
         * Bytes per ranged GET.
         *
         * @param rangeBytes 64 KiB .. 1 GiB
         * @return this builder
         */
        public Builder rangeBytes(long rangeBytes) {
            if (rangeBytes < (64 << 10) || rangeBytes > (1L << 30)) {
                throw new IllegalArgumentException("S3 range size must be 64 KiB..1 GiB, was " + rangeBytes + " bytes");
            }
            this.rangeBytes = rangeBytes;
            return this;
        }

        /**
         * Tries per request, the first included, for retryable failures (connection resets,
         * short bodies, 5xx, 503 SlowDown).
         *
         * @param maxAttempts 1..100
         * @return this builder
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1 || maxAttempts > 100) {
                throw new IllegalArgumentException("S3 max attempts must be 1..100, was " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * Exponential backoff with full jitter between tries: try n waits a random time up to
         * {@code min(max, base * 2^(n-1))}; a server's Retry-After raises it (up to max).
         *
         * @param base the first ceiling
         * @param max the largest wait
         * @return this builder
         */
        public Builder backoff(Duration base, Duration max) {
            if (base.isNegative() || max.compareTo(base) < 0) {
                throw new IllegalArgumentException("backoff: need 0 <= base <= max, were " + base + ", " + max);
            }
            this.backoffBase = base;
            this.backoffMax = max;
            return this;
        }

        /**
         * How long a connection may take to open, a response's headers to come, and a body to
         * stay without a byte, before the try fails (and is retried).
         *
         * @param timeout a positive duration
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be positive, was " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * Bytes of each object's first, speculative GET (its header is parsed from them; a
         * longer header costs one more GET).
         *
         * @param bytes 8 .. 16 MiB
         * @return this builder
         */
        public Builder headerPrefetchBytes(int bytes) {
            if (bytes < 8 || bytes > (16 << 20)) {
                throw new IllegalArgumentException("header prefetch must be 8 bytes..16 MiB, was " + bytes);
            }
            this.headerPrefetchBytes = bytes;
            return this;
        }

        /**
         * The settings.
         *
         * @return the settings
         */
        public S3Settings build() {
            return new S3Settings(this);
        }
    }

    /**
     * The custom endpoint.
     *
     * @return the endpoint, or empty for AWS
     */
    public Optional<URI> endpoint() {
        return Optional.ofNullable(endpoint);
    }

    /**
     * The signing region.
     *
     * @return the region
     */
    public String region() {
        return region;
    }

    /**
     * Whether buckets are addressed path-style.
     *
     * @return true for path-style addressing
     */
    public boolean pathStyle() {
        return pathStyle;
    }

    /**
     * Whether requests are signed.
     *
     * @return true when credentials were given or found
     */
    public boolean hasCredentials() {
        return accessKeyId != null;
    }

    /**
     * Where the credentials came from, for messages: never the keys themselves.
     *
     * @return e.g. "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY" or "profile 'default'"
     */
    public String credentialsSource() {
        return credentialsSource;
    }

    /**
     * Ranged GETs in flight at once.
     *
     * @return the concurrency
     */
    public int concurrency() {
        return concurrency;
    }

    /**
     * Bytes per ranged GET.
     *
     * @return the range size
     */
    public long rangeBytes() {
        return rangeBytes;
    }

    /**
     * Tries per request.
     *
     * @return the most tries, the first included
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * The first backoff ceiling.
     *
     * @return the base of the exponential backoff
     */
    public Duration backoffBase() {
        return backoffBase;
    }

    /**
     * The largest backoff.
     *
     * @return the cap of the exponential backoff
     */
    public Duration backoffMax() {
        return backoffMax;
    }

    /**
     * The connect, response and idle-body timeout.
     *
     * @return the timeout
     */
    public Duration timeout() {
        return timeout;
    }

    /**
     * Bytes of the first GET of each object.
     *
     * @return the header prefetch size
     */
    public int headerPrefetchBytes() {
        return headerPrefetchBytes;
    }

    String accessKeyId() {
        return accessKeyId;
    }

    String secretAccessKey() {
        return secretAccessKey;
    }

    String sessionToken() {
        return sessionToken;
    }

    /** The access key id as messages may show it: its first four characters. */
    String redactedAccessKeyId() {
        return accessKeyId == null ? "none" : accessKeyId.substring(0, Math.min(4, accessKeyId.length())) + "****";
    }

    /** What the endpoint is called in messages. */
    String endpointName() {
        return endpoint == null ? "AWS S3 (" + region + ")" : endpoint.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof S3Settings s && Objects.equals(endpoint, s.endpoint) && region.equals(s.region)
                && pathStyle == s.pathStyle && Objects.equals(accessKeyId, s.accessKeyId)
                && Objects.equals(secretAccessKey, s.secretAccessKey) && Objects.equals(sessionToken, s.sessionToken)
                && concurrency == s.concurrency && rangeBytes == s.rangeBytes && maxAttempts == s.maxAttempts
                && backoffBase.equals(s.backoffBase) && backoffMax.equals(s.backoffMax) && timeout.equals(s.timeout)
                && headerPrefetchBytes == s.headerPrefetchBytes;
    }

    @Override
    public int hashCode() {
        return Objects.hash(endpoint, region, pathStyle, accessKeyId, concurrency, rangeBytes);
    }

    @Override
    public String toString() {
        return "S3Settings[endpoint " + endpointName() + (pathStyle ? ", path-style" : ", virtual-hosted") + ", region "
                + region + ", access key " + redactedAccessKeyId() + " from " + credentialsSource
                + (sessionToken != null ? " (with session token)" : "") + ", concurrency " + concurrency + ", range "
                + (rangeBytes >> 10) + " KiB, " + maxAttempts + " attempts]";
    }
}
