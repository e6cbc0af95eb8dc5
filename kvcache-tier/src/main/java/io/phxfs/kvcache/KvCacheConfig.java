package io.phxfs.kvcache;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The engine's settings, named as LMCache names them ({@code chunk_size}, {@code local_cpu},
 * {@code max_local_cpu_size}, {@code local_disk}, {@code max_local_disk_size},
 * {@code remote_url}), read from a YAML or JSON file ({@link #load}) or built ({@link #builder}).
 * Sizes in files are in GB (10^9 bytes) as in LMCache; the builder takes bytes.
 *
 * @param chunkSize         tokens per chunk ({@code chunk_size}, default 256)
 * @param saveUnfullChunk   whether a partial last chunk is stored ({@code save_unfull_chunk}, default false)
 * @param localCpu          whether the memory tier is on ({@code local_cpu}, default true)
 * @param maxLocalCpuBytes  the memory tier's pool ({@code max_local_cpu_size}, default 5 GB)
 * @param localDisk         the disk tier's directory ({@code local_disk}, {@code file:///path} or a path), or null for none
 * @param maxLocalDiskBytes the disk tier's cap ({@code max_local_disk_size}, default 10 GB)
 * @param diskMinFreeBytes  free space the disk tier leaves on its file system ({@code local_disk_min_free}, default 1 GB)
 * @param fsync             when chunk files are synced ({@code local_disk_fsync}: none, file (default) or full)
 * @param remoteUrl         the Redis tier ({@code remote_url}: {@code redis://}, {@code rediss://},
 *                          {@code redis-cluster://h1:p1,h2:p2,...} or {@code rediss-cluster://...}, see
 *                          {@link RemoteUrl}), or null
 * @param remoteUsername    Redis ACL user ({@code remote_username}), or null
 * @param remotePassword    Redis password ({@code remote_password}), or null; never in {@link #toString()}
 * @param remoteTimeout     per-command limit for Redis ({@code remote_timeout_ms}, default 2000)
 * @param remoteReadFrom    where a cluster's reads go ({@code remote_read_from}: master (default),
 *                          master_preferred, replica, replica_preferred, any, any_replica, nearest)
 * @param remoteTlsCaFile   PEM file of the CA certificates that TLS servers are checked against
 *                          ({@code remote_tls_ca_file}), or null for the JVM's trust store
 * @param remoteTlsCertFile PEM client certificate chain for servers that ask for one
 *                          ({@code remote_tls_cert_file}, with {@code remote_tls_key_file}), or null
 * @param remoteTlsKeyFile  PEM (PKCS#8, unencrypted) key of that certificate ({@code remote_tls_key_file}), or null
 * @param writeQueueChunks  write-behind queue bound in chunks ({@code write_queue_chunks}, default 64)
 * @param ioThreads         threads moving chunks to and from disk and Redis ({@code io_threads}, default 4)
 * @param model             the model's name in keys ({@code model_name}, default "model")
 * @param worldSize         tensor-parallel world size in keys ({@code world_size}, default 1)
 * @param workerId          this worker's rank in keys ({@code worker_id}, default 0)
 */
public record KvCacheConfig(int chunkSize, boolean saveUnfullChunk, boolean localCpu, long maxLocalCpuBytes,
                            Path localDisk, long maxLocalDiskBytes, long diskMinFreeBytes, DiskTier.FsyncPolicy fsync,
                            String remoteUrl, String remoteUsername, String remotePassword, Duration remoteTimeout,
                            String remoteReadFrom, Path remoteTlsCaFile, Path remoteTlsCertFile, Path remoteTlsKeyFile,
                            int writeQueueChunks, int ioThreads, String model, int worldSize, int workerId) {
    private static final double GB = 1e9;
    private static final Set<String> KEYS = new TreeSet<>(Set.of("chunk_size", "save_unfull_chunk", "local_cpu",
            "max_local_cpu_size", "local_disk", "max_local_disk_size", "local_disk_min_free", "local_disk_fsync",
            "remote_url", "remote_username", "remote_password", "remote_timeout_ms", "remote_read_from",
            "remote_tls_ca_file", "remote_tls_cert_file", "remote_tls_key_file", "write_queue_chunks",
            "io_threads", "model_name", "world_size", "worker_id"));

    /**
     * Checks the settings.
     *
     * @throws IllegalArgumentException naming the setting that is out of range
     */
    public KvCacheConfig {
        positive("chunk_size", chunkSize);
        positive("write_queue_chunks", writeQueueChunks);
        positive("io_threads", ioThreads);
        positive("world_size", worldSize);
        if (localCpu && maxLocalCpuBytes <= 0) {
            throw new IllegalArgumentException("max_local_cpu_size must be > 0 with local_cpu: true");
        }
        if (localDisk != null && maxLocalDiskBytes <= 0) {
            throw new IllegalArgumentException("max_local_disk_size must be > 0 with local_disk set");
        }
        if (workerId < 0 || workerId >= worldSize) {
            throw new IllegalArgumentException("worker_id " + workerId + " outside world_size " + worldSize);
        }
        if (fsync == null || remoteTimeout == null || model == null) {
            throw new IllegalArgumentException("fsync, remote timeout and model name are required");
        }
        remoteReadFrom = remoteReadFrom == null ? "master" : remoteReadFrom.toLowerCase(Locale.ROOT);
        checkRemote(remoteUrl, remoteTimeout, remoteReadFrom, remoteTlsCaFile, remoteTlsCertFile, remoteTlsKeyFile);
    }

    /** The remote_* settings together: each alone may be fine and the set still make no sense. */
    private static void checkRemote(String url, Duration timeout, String readFrom, Path ca, Path cert, Path key) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("remote_timeout_ms must be > 0, was " + timeout.toMillis());
        }
        RedisTier.readFrom(readFrom); // names remote_read_from when it is none of the known
        RemoteUrl u = url == null ? null : RemoteUrl.parse(url, "remote_url");
        if (u != null && !u.isCluster() && !readFrom.equals("master")) {
            throw new IllegalArgumentException("remote_read_from: " + readFrom + " needs replicas to read from, a"
                    + " redis-cluster:// remote_url; remote_url '" + u + "' is one server");
        }
        if ((ca != null || cert != null || key != null) && (u == null || !u.tls())) {
            throw new IllegalArgumentException("remote_tls_*: set, but remote_url '" + u + "' is not rediss:// or"
                    + " rediss-cluster://");
        }
        if ((cert == null) != (key == null)) {
            throw new IllegalArgumentException("remote_tls_cert_file and remote_tls_key_file go together; only "
                    + (cert != null ? "remote_tls_cert_file" : "remote_tls_key_file") + " is set");
        }
        readable("remote_tls_ca_file", ca);
        readable("remote_tls_cert_file", cert);
        readable("remote_tls_key_file", key);
    }

    private static void readable(String key, Path p) {
        if (p != null && !(Files.isRegularFile(p) && Files.isReadable(p))) {
            throw new IllegalArgumentException(key + ": " + p + (Files.exists(p) ? " is not a readable file" : " does not exist"));
        }
    }

    /**
     * The settings, with the password masked and {@code remote_url}'s too: a configuration is
     * logged and printed.
     */
    @Override
    public String toString() {
        return "KvCacheConfig[chunkSize=" + chunkSize + ", saveUnfullChunk=" + saveUnfullChunk + ", localCpu=" + localCpu
                + ", maxLocalCpuBytes=" + maxLocalCpuBytes + ", localDisk=" + localDisk + ", maxLocalDiskBytes="
                + maxLocalDiskBytes + ", diskMinFreeBytes=" + diskMinFreeBytes + ", fsync=" + fsync + ", remoteUrl="
                + RemoteUrl.redact(remoteUrl) + ", remoteUsername=" + remoteUsername + ", remotePassword="
                + (remotePassword == null ? null : "***") + ", remoteTimeout=" + remoteTimeout + ", remoteReadFrom="
                + remoteReadFrom + ", remoteTlsCaFile=" + remoteTlsCaFile + ", remoteTlsCertFile=" + remoteTlsCertFile
                + ", remoteTlsKeyFile=" + remoteTlsKeyFile + ", writeQueueChunks=" + writeQueueChunks + ", ioThreads="
                + ioThreads + ", model=" + model + ", worldSize=" + worldSize + ", workerId=" + workerId + "]";
    }

    private static void positive(String key, long v) {
        if (v <= 0) {
            throw new IllegalArgumentException(key + " must be > 0, was " + v);
        }
    }

    /**
     * A builder with the defaults.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Reads a YAML ({@code .yaml}, {@code .yml}) or JSON file of LMCache-style keys; keys left
     * out keep their defaults.
     *
     * @param file the file
     * @return the settings
     * @throws IllegalArgumentException naming the file and the key for an unknown key or a bad value
     * @throws UncheckedIOException naming the file when it cannot be read
     */
    public static KvCacheConfig load(Path file) {
        String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
        ObjectMapper mapper = name.endsWith(".json") ? new ObjectMapper() : new ObjectMapper(new YAMLFactory());
        JsonNode root;
        try {
            root = mapper.readTree(Files.readAllBytes(file));
        } catch (IOException e) {
            if (e instanceof com.fasterxml.jackson.core.JacksonException je) {
                // the parser's message quotes the token it stopped at (a password, unquoted) and its
                // full form a snippet of the file: only the masked first line and the place are
                // kept, and the parser's exception is not attached as the cause
                var at = je.getLocation();
                String where = at == null || at.getLineNr() < 0 ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")";
                String why = je.getOriginalMessage() == null ? "" : je.getOriginalMessage().lines().findFirst().orElse("");
                throw new IllegalArgumentException(file + ": not valid " + (name.endsWith(".json") ? "JSON" : "YAML")
                        + ": " + maskSecrets(why, file) + where);
            }
            String why = e instanceof java.nio.file.NoSuchFileException ? "no such file"
                    : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                    : Files.isDirectory(file) ? "a directory, not a settings file" : e.getMessage();
            throw new UncheckedIOException(file + ": cannot read the KV-cache settings: " + why, e);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return builder().build();
        }
        if (!root.isObject()) {
            throw new IllegalArgumentException(file + ": expected a mapping of settings, found " + root.getNodeType());
        }
        Map<String, JsonNode> m = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            var e = it.next();
            if (!KEYS.contains(e.getKey())) {
                throw new IllegalArgumentException(file + ": unknown setting '" + e.getKey() + "'; known: " + KEYS);
            }
            m.put(e.getKey(), e.getValue());
        }
        Builder b = builder();
        try {
            for (var e : m.entrySet()) {
                String k = e.getKey();
                JsonNode v = e.getValue();
                switch (k) {
                    case "chunk_size" -> b.chunkSize(integer(k, v));
                    case "save_unfull_chunk" -> b.saveUnfullChunk(bool(k, v));
                    case "local_cpu" -> b.localCpu(bool(k, v));
                    case "max_local_cpu_size" -> b.maxLocalCpuBytes(gb(k, v));
                    case "local_disk" -> b.localDisk(v.isNull() ? null : diskPath(text(k, v)));
                    case "max_local_disk_size" -> b.maxLocalDiskBytes(gb(k, v));
                    case "local_disk_min_free" -> b.diskMinFreeBytes(gb(k, v));
                    case "local_disk_fsync" -> b.fsync(fsyncPolicy(text(k, v)));
                    case "remote_url" -> b.remoteUrl(v.isNull() ? null : text(k, v));
                    case "remote_username" -> b.remoteUsername(text(k, v));
                    case "remote_password" -> b.remotePassword(text(k, v));
                    case "remote_timeout_ms" -> b.remoteTimeout(Duration.ofMillis(integer(k, v)));
                    case "remote_read_from" -> b.remoteReadFrom(text(k, v));
                    case "remote_tls_ca_file" -> b.remoteTlsCaFile(v.isNull() ? null : Path.of(text(k, v)));
                    case "remote_tls_cert_file" -> b.remoteTlsCertFile(v.isNull() ? null : Path.of(text(k, v)));
                    case "remote_tls_key_file" -> b.remoteTlsKeyFile(v.isNull() ? null : Path.of(text(k, v)));
                    case "write_queue_chunks" -> b.writeQueueChunks(integer(k, v));
                    case "io_threads" -> b.ioThreads(integer(k, v));
                    case "model_name" -> b.model(text(k, v));
                    case "world_size" -> b.worldSize(integer(k, v));
                    case "worker_id" -> b.workerId(integer(k, v));
                    default -> throw new IllegalStateException(k);
                }
            }
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    private static int integer(String k, JsonNode v) {
        if (!v.canConvertToInt() || !v.isIntegralNumber()) {
            throw new IllegalArgumentException(k + ": expected an integer, found '" + v.asText() + "'");
        }
        return v.intValue();
    }

    private static boolean bool(String k, JsonNode v) {
        if (!v.isBoolean()) {
            throw new IllegalArgumentException(k + ": expected true or false, found '" + v.asText() + "'");
        }
        return v.booleanValue();
    }

    private static long gb(String k, JsonNode v) {
        if (!v.isNumber() || v.doubleValue() < 0) {
            throw new IllegalArgumentException(k + ": expected a size in GB (a number >= 0), found '" + v.asText() + "'");
        }
        return Math.round(v.doubleValue() * GB);
    }

    private static String text(String k, JsonNode v) {
        if (!v.isTextual()) {
            // remote_password: 12345 is a password too, never echoed
            String found = k.equals("remote_password") ? "a " + v.getNodeType().toString().toLowerCase(Locale.ROOT) : "'" + v.asText() + "'";
            throw new IllegalArgumentException(k + ": expected a string, found " + found);
        }
        return v.textValue();
    }

    private static final java.util.regex.Pattern PASSWORD_VALUE =
            java.util.regex.Pattern.compile("remote_password[\"']?\\s*[:=]\\s*[\"']?([^\"'\\s,}\\]#]+)");
    private static final java.util.regex.Pattern URL_USERINFO = java.util.regex.Pattern.compile("://([^\\s\"']*)@");

    /**
     * {@code msg} with every password the file holds ({@code remote_password}'s value, the
     * user-info of any URL) replaced by {@code ***}; the file is read again for them.
     */
    static String maskSecrets(String msg, Path file) {
        String text;
        try {
            text = Files.readString(file, java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            return msg.replaceAll("'[^']*'", "'***'"); // cannot tell the secrets: mask every quoted token
        }
        List<String> secrets = new java.util.ArrayList<>();
        for (var pat : List.of(PASSWORD_VALUE, URL_USERINFO)) {
            var m = pat.matcher(text);
            while (m.find()) {
                String v = m.group(1);
                int colon = pat == URL_USERINFO ? v.indexOf(':') : -1;
                secrets.add(colon >= 0 ? v.substring(colon + 1) : v);
            }
        }
        secrets.sort((a, b) -> b.length() - a.length());
        for (String sec : secrets) {
            if (!sec.isEmpty()) {
                msg = msg.replace(sec, "***");
            }
        }
        return msg;
    }

    /** {@code file:///path} (LMCache's form) or a plain path; the error names local_disk. */
    static Path diskPath(String s) {
        if (s.isBlank()) {
            throw new IllegalArgumentException("local_disk: empty; leave it out (or null) for no disk tier");
        }
        try {
            if (s.startsWith("file:")) {
                return Path.of(URI.create(s));
            }
            return Path.of(s);
        } catch (IllegalArgumentException e) { // URI.create, Path.of(URI) and InvalidPathException
            String why = e instanceof java.nio.file.InvalidPathException ip ? ip.getReason() : e.getMessage();
            throw new IllegalArgumentException("local_disk: '" + s + "' is neither file:///absolute/path nor a path ("
                    + why + (s.startsWith("file://") && !s.startsWith("file:///") ? "; file:// takes an absolute path,"
                    + " three slashes in all" : "") + ")", e);
        }
    }

    static DiskTier.FsyncPolicy fsyncPolicy(String s) {
        try {
            return DiskTier.FsyncPolicy.valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("local_disk_fsync: '" + s + "' is none of none, file, full", e);
        }
    }

    /** Builds a {@link KvCacheConfig}; every setter returns the builder. */
    public static final class Builder {
        private int chunkSize = 256;
        private boolean saveUnfullChunk;
        private boolean localCpu = true;
        private long maxLocalCpuBytes = 5_000_000_000L;
        private Path localDisk;
        private long maxLocalDiskBytes = 10_000_000_000L;
        private long diskMinFreeBytes = 1_000_000_000L;
        private DiskTier.FsyncPolicy fsync = DiskTier.FsyncPolicy.FILE;
        private String remoteUrl;
        private String remoteUsername;
        private String remotePassword;
        private Duration remoteTimeout = Duration.ofMillis(2000);
        private String remoteReadFrom = "master";
        private Path remoteTlsCaFile;
        private Path remoteTlsCertFile;
        private Path remoteTlsKeyFile;
        private int writeQueueChunks = 64;
        private int ioThreads = 4;
        private String model = "model";
        private int worldSize = 1;
        private int workerId;

        private Builder() {
        }

        /**
         * Sets {@code chunk_size}.
         *
         * @param v tokens per chunk
         * @return this builder
         */
        public Builder chunkSize(int v) {
            chunkSize = v;
            return this;
        }

        /**
         * Sets {@code save_unfull_chunk}.
         *
         * @param v whether a partial last chunk is stored
         * @return this builder
         */
        public Builder saveUnfullChunk(boolean v) {
            saveUnfullChunk = v;
            return this;
        }

        /**
         * Sets {@code local_cpu}.
         *
         * @param v whether the memory tier is on
         * @return this builder
         */
        public Builder localCpu(boolean v) {
            localCpu = v;
            return this;
        }

        /**
         * Sets {@code max_local_cpu_size}.
         *
         * @param v bytes
         * @return this builder
         */
        public Builder maxLocalCpuBytes(long v) {
            maxLocalCpuBytes = v;
            return this;
        }

        /**
         * Sets {@code local_disk}.
         *
         * @param v the directory, or null for no disk tier
         * @return this builder
         */
        public Builder localDisk(Path v) {
            localDisk = v;
            return this;
        }

        /**
         * Sets {@code max_local_disk_size}.
         *
         * @param v bytes
         * @return this builder
         */
        public Builder maxLocalDiskBytes(long v) {
            maxLocalDiskBytes = v;
            return this;
        }

        /**
         * Sets {@code local_disk_min_free}.
         *
         * @param v bytes to leave free
         * @return this builder
         */
        public Builder diskMinFreeBytes(long v) {
            diskMinFreeBytes = v;
            return this;
        }

        /**
         * Sets {@code local_disk_fsync}.
         *
         * @param v the policy
         * @return this builder
         */
        public Builder fsync(DiskTier.FsyncPolicy v) {
            fsync = v;
            return this;
        }

        /**
         * Sets {@code remote_url}.
         *
         * @param v {@code redis://host:port}, {@code redis-cluster://h1:p1,h2:p2,...} (or the TLS forms
         *          {@code rediss://}, {@code rediss-cluster://}), or null for no remote tier
         * @return this builder
         */
        public Builder remoteUrl(String v) {
            remoteUrl = v;
            return this;
        }

        /**
         * Sets {@code remote_username}.
         *
         * @param v the ACL user
         * @return this builder
         */
        public Builder remoteUsername(String v) {
            remoteUsername = v;
            return this;
        }

        /**
         * Sets {@code remote_password}.
         *
         * @param v the password
         * @return this builder
         */
        public Builder remotePassword(String v) {
            remotePassword = v;
            return this;
        }

        /**
         * Sets {@code remote_timeout_ms}.
         *
         * @param v the per-command limit
         * @return this builder
         */
        public Builder remoteTimeout(Duration v) {
            remoteTimeout = v;
            return this;
        }

        /**
         * Sets {@code remote_read_from}.
         *
         * @param v master, master_preferred, replica, replica_preferred, any, any_replica or nearest
         * @return this builder
         */
        public Builder remoteReadFrom(String v) {
            remoteReadFrom = v;
            return this;
        }

        /**
         * Sets {@code remote_tls_ca_file}.
         *
         * @param v a PEM file of CA certificates, or null for the JVM's trust store
         * @return this builder
         */
        public Builder remoteTlsCaFile(Path v) {
            remoteTlsCaFile = v;
            return this;
        }

        /**
         * Sets {@code remote_tls_cert_file}.
         *
         * @param v a PEM client certificate chain, or null
         * @return this builder
         */
        public Builder remoteTlsCertFile(Path v) {
            remoteTlsCertFile = v;
            return this;
        }

        /**
         * Sets {@code remote_tls_key_file}.
         *
         * @param v the PEM (PKCS#8) key of the client certificate, or null
         * @return this builder
         */
        public Builder remoteTlsKeyFile(Path v) {
            remoteTlsKeyFile = v;
            return this;
        }

        /**
         * Sets {@code write_queue_chunks}.
         *
         * @param v the write-behind queue bound
         * @return this builder
         */
        public Builder writeQueueChunks(int v) {
            writeQueueChunks = v;
            return this;
        }

        /**
         * Sets {@code io_threads}.
         *
         * @param v threads for disk and Redis transfers
         * @return this builder
         */
        public Builder ioThreads(int v) {
            ioThreads = v;
            return this;
        }

        /**
         * Sets {@code model_name}.
         *
         * @param v the model's name in keys
         * @return this builder
         */
        public Builder model(String v) {
            model = v;
            return this;
        }

        /**
         * Sets {@code world_size}.
         *
         * @param v the world size
         * @return this builder
         */
        public Builder worldSize(int v) {
            worldSize = v;
            return this;
        }

        /**
         * Sets {@code worker_id}.
         *
         * @param v this worker's rank
         * @return this builder
         */
        public Builder workerId(int v) {
            workerId = v;
            return this;
        }

        /**
         * The settings.
         *
         * @return the checked configuration
         * @throws IllegalArgumentException naming the setting out of range
         */
        public KvCacheConfig build() {
            return new KvCacheConfig(chunkSize, saveUnfullChunk, localCpu, maxLocalCpuBytes, localDisk,
                    maxLocalDiskBytes, diskMinFreeBytes, fsync, remoteUrl, remoteUsername, remotePassword,
                    remoteTimeout, remoteReadFrom, remoteTlsCaFile, remoteTlsCertFile, remoteTlsKeyFile,
                    writeQueueChunks, ioThreads, model, worldSize, workerId);
        }
    }
}
