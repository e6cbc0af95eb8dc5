package io.phxfs.kvcache;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

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
 * @param ioThreads         threads moving chunks to and from disk and Redis ({@code io_threads}, default 4,
 *                          at most {@link #MAX_IO_THREADS})
 * @param model             the model's name in keys ({@code model_name}, default "model")
 * @param worldSize         tensor-parallel world size in keys ({@code world_size}, default 1)
 * @param workerId          this worker's rank in keys ({@code worker_id}, default 0)
 */
public record KvCacheConfig(int chunkSize, boolean saveUnfullChunk, boolean localCpu, long maxLocalCpuBytes,
                            Path localDisk, long maxLocalDiskBytes, long diskMinFreeBytes, DiskTier.FsyncPolicy fsync,
                            String remoteUrl, String remoteUsername, String remotePassword, Duration remoteTimeout,
                            String remoteReadFrom, Path remoteTlsCaFile, Path remoteTlsCertFile, Path remoteTlsKeyFile,
                            int writeQueueChunks, int ioThreads, String model, int worldSize, int workerId) {
    /**
     * The most {@code io_threads}: each is a write-behind thread started with the engine and
     * holds a pinned staging buffer of one chunk while it moves one; past a few hundred they
     * only add memory and contention (100000 started 100000 threads).
     */
    public static final int MAX_IO_THREADS = 256;

    /**
     * Checks the settings.
     *
     * @throws IllegalArgumentException naming the setting that is out of range
     */
    public KvCacheConfig {
        positive("chunk_size", chunkSize);
        positive("write_queue_chunks", writeQueueChunks);
        if (ioThreads < 1 || ioThreads > MAX_IO_THREADS) {
            throw new IllegalArgumentException("io_threads must be from 1 to " + MAX_IO_THREADS + ", was " + ioThreads);
        }
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
     * out keep their defaults. Values take LMCache's forms too: numbers and booleans may be
     * quoted ({@code "5.0"}, {@code "True"}), as LMCache converts them. LMCache settings this tier
     * does not implement are refused naming them, except at the value that means what this
     * tier does anyway ({@code remote_serde: naive}, {@code use_layerwise: false}, ...).
     *
     * @param file the file
     * @return the settings
     * @throws IllegalArgumentException naming the file and the key for an unknown key or a bad value
     * @throws UncheckedIOException naming the file when it cannot be read
     */
    public static KvCacheConfig load(Path file) {
        return SettingsFile.load(file);
    }

    /**
     * The settings LMCache would take from the environment: the file {@code LMCACHE_CONFIG_FILE}
     * names ({@link #load}; the other variables are then ignored, as LMCache ignores them), else
     * one {@code LMCACHE_<KEY>} variable per key ({@code LMCACHE_CHUNK_SIZE=256},
     * {@code LMCACHE_LOCAL_DISK=file:///path/}, ...). Variables that are no setting of LMCache's
     * ({@code LMCACHE_USE_EXPERIMENTAL}, {@code LMCACHE_LOG_LEVEL}) are left alone.
     *
     * @param env the environment ({@code System.getenv()})
     * @return the settings, or null when no {@code LMCACHE_} variable names a setting
     * @throws IllegalArgumentException naming the variable for a bad value or a setting this tier does not implement
     */
    public static KvCacheConfig fromEnvironment(Map<String, String> env) {
        return SettingsFile.fromEnvironment(env);
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
