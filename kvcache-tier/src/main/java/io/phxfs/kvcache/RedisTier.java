package io.phxfs.kvcache;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.ReadFrom;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.api.async.RedisStringAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.protocol.ConnectionIntent;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.zip.CRC32C;

/**
 * Redis through Lettuce: one server ({@code redis://host:port}, {@code rediss://} for TLS) or a
 * Redis Cluster ({@code redis-cluster://h1:p1,h2:p2,...}, {@code rediss-cluster://} for TLS;
 * see {@link RemoteUrl}). Each chunk is one key whose value is the same 4 KiB
 * {@link ChunkFileHeader header} as a chunk file followed by the payload, written with one SET:
 * a reader sees all of an entry or nothing, and checks key, layout, length and CRC32C before it
 * copies a byte out. In a cluster the key's slot picks the shard, so the chunks of one prompt
 * spread over the shards; {@link #putAll}, {@link #getAll} and {@link #containsEach} send all
 * their commands before waiting for any (pipelined, each shard's share on its own connection).
 *
 * <p>An unreachable or failing server, shard or node is a miss or a failed store, counted, never
 * an exception to the caller: commands are refused at once while a connection is down (Lettuce
 * reconnects in the background) and time out after the configured limit otherwise. A cluster's
 * topology is refreshed periodically and whenever a command meets a redirect, an uncovered slot
 * or a node that keeps refusing connections, so that after a failover the promoted replica takes
 * the commands within about a second of its promotion.
 *
 * <p>A single server may come up after the tier (it is tried again on use), but one that answers
 * and refuses the settings (a wrong password or user, a missing database, TLS against plain TCP)
 * fails the start with the reason; a cluster must answer when the tier opens, since its shards
 * are known only from it.
 */
public final class RedisTier implements KvTier {
    private static final ChunkCodec CODEC = new ChunkCodec();
    private static final long RETRY_CONNECT_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    /**
     * Bytes of values one {@link #putAll} or {@link #getAll} keeps in flight. Lettuce encodes a
     * SET into Netty's buffer as soon as it is sent and a GET's reply lands on the heap whole, so
     * unbounded, a store of 64 chunks of 32 MiB would hold 2 GiB at once; 256 MiB keeps every
     * shard's socket busy (8 llama-8b chunks over 3 shards) and the memory bounded.
     */
    static final long WINDOW_BYTES = 256L << 20;
    /** How often a cluster's topology is read again without a cause (a failover is also noticed sooner, adaptively). */
    static final Duration TOPOLOGY_REFRESH = Duration.ofSeconds(10);
    /**
     * The least time between two adaptive topology refreshes. Lettuce's default is 30 s: a
     * refresh triggered when a master dies comes before its replica is promoted (the cluster
     * takes node-timeout plus an election), and the next trigger would then be ignored for 30 s,
     * every store and retrieve of that shard failing meanwhile.
     */
    static final Duration ADAPTIVE_REFRESH_LIMIT = Duration.ofSeconds(1);
    /** Beyond Lettuce's own command timeout: a wait here never ends before Lettuce's does. */
    private static final long GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    private static final Object FAILED = new Object();

    private static final Map<String, ReadFrom> READ_FROM = readFromNames();

    private final RemoteUrl url;
    private final List<RedisURI> uris;
    private final String password;
    private final Duration timeout;
    private final String readFromName;
    private final ReadFrom readFrom;
    private final AtomicLong lastWarm = new AtomicLong(System.nanoTime());
    private final AbstractRedisClient client;
    private final Counters c = new Counters();
    private final AtomicLong lastConnectTry = new AtomicLong(System.nanoTime() - RETRY_CONNECT_NANOS);
    private volatile Link link;
    private volatile boolean closed;

    /** A connection and its commands: one server's, or the cluster's (which routes each key to its shard). */
    private record Link(StatefulConnection<String, Object> conn, RedisStringAsyncCommands<String, Object> strings,
                        RedisKeyAsyncCommands<String, Object> keys) {
    }

    private static Map<String, ReadFrom> readFromNames() {
        Map<String, ReadFrom> m = new LinkedHashMap<>();
        m.put("master", ReadFrom.UPSTREAM);
        m.put("master_preferred", ReadFrom.UPSTREAM_PREFERRED);
        m.put("replica", ReadFrom.REPLICA);
        m.put("replica_preferred", ReadFrom.REPLICA_PREFERRED);
        m.put("any", ReadFrom.ANY);
        m.put("any_replica", ReadFrom.ANY_REPLICA);
        m.put("nearest", ReadFrom.LOWEST_LATENCY);
        return m;
    }

    /** The Lettuce setting for a {@code remote_read_from} value; names the key when unknown. */
    static ReadFrom readFrom(String name) {
        ReadFrom r = name == null ? null : READ_FROM.get(name);
        if (r == null) {
            throw new IllegalArgumentException("remote_read_from: '" + name + "' is none of "
                    + String.join(", ", READ_FROM.keySet()));
        }
        return r;
    }

    /**
     * Opens the tier the configuration's {@code remote_*} settings name.
     *
     * @param config the settings; {@code remote_url} must be set
     * @throws IllegalArgumentException naming the URL (password masked) when it is malformed, when
     *                                  it names a cluster of which no node answers, or a server that
     *                                  refuses the settings
     */
    public RedisTier(KvCacheConfig config) {
        this(config.remoteUrl(), config.remoteUsername(), config.remotePassword(), config.remoteTimeout(),
                config.remoteReadFrom(), config.remoteTlsCaFile(), config.remoteTlsCertFile(), config.remoteTlsKeyFile());
    }

    /**
     * Connects to {@code url} (a single server lazily again whenever it is away), reading from
     * masters, TLS checked against the JVM's trust store.
     *
     * @param url      {@code redis://[[user]:password@]host:port[/db]}, {@code rediss://...},
     *                 {@code redis-cluster://[[user]:password@]h1:p1,h2:p2,...} or {@code rediss-cluster://...}
     * @param username ACL user, or null (one in the URL counts too)
     * @param password password, or null (one in the URL counts too)
     * @param timeout  per-command limit
     * @throws IllegalArgumentException naming the URL when it cannot be parsed, or names a cluster that does not answer
     */
    public RedisTier(String url, String username, String password, Duration timeout) {
        this(url, username, password, timeout, "master", null, null, null);
    }

    private RedisTier(String url, String username, String password, Duration timeout, String readFrom, Path ca,
                      Path cert, Path key) {
        this.url = RemoteUrl.parse(url, "remote_url");
        ReadFrom rf = readFrom(readFrom);
        this.readFromName = readFrom;
        this.readFrom = rf;
        this.timeout = timeout;
        this.uris = this.url.redisUris(username, password, timeout);
        this.password = password != null ? password : this.url.password();
        SslOptions ssl = null;
        if (this.url.tls()) {
            SslOptions.Builder b = SslOptions.builder().jdkSslProvider();
            if (ca != null) {
                b.trustManager(ca.toFile());
            }
            if (cert != null) {
                b.keyManager(cert.toFile(), key.toFile(), null);
            }
            ssl = b.build();
        }
        SocketOptions socket = SocketOptions.builder().connectTimeout(timeout).build();
        if (this.url.isCluster()) {
            RedisClusterClient cc = RedisClusterClient.create(uris);
            ClusterClientOptions.Builder o = ClusterClientOptions.builder()
                    .autoReconnect(true)
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .timeoutOptions(TimeoutOptions.enabled(timeout))
                    .socketOptions(socket)
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enablePeriodicRefresh(TOPOLOGY_REFRESH)
                            .enableAllAdaptiveRefreshTriggers()
                            .adaptiveRefreshTriggersTimeout(ADAPTIVE_REFRESH_LIMIT)
                            .refreshTriggersReconnectAttempts(3)
                            .dynamicRefreshSources(true)
                            .closeStaleConnections(true)
                            .build())
                    // a node the cluster has marked failed is no target, for reads from replicas
                    // above all; a merely suspected one (PFAIL, one node's view) stays: on a busy
                    // machine that flag comes and goes, and dropping it would cost hits for nothing
                    .nodeFilter(n -> !n.is(RedisClusterNode.NodeFlag.FAIL) && !n.is(RedisClusterNode.NodeFlag.NOADDR));
            if (ssl != null) {
                o.sslOptions(ssl);
            }
            cc.setOptions(o.build());
            this.client = cc;
            try {
                StatefulRedisClusterConnection<String, Object> cn = cc.connect(CODEC);
                cn.setReadFrom(rf);
                RedisAdvancedClusterAsyncCommands<String, Object> async = cn.async();
                this.link = new Link(cn, async, async);
                try {
                    warm(cn).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                } catch (ExecutionException | TimeoutException e) {
                    // a node away at the start: its chunks are misses until it answers
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            } catch (RuntimeException e) {
                cc.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                throw new IllegalArgumentException("remote_url '" + this.url + "': no node of the cluster answered"
                        + " (tried " + this.url.hosts().stream().map(RemoteUrl.HostPort::toString)
                        .collect(Collectors.joining(", ")) + ", each for up to " + timeout.toMillis() + " ms: "
                        + describe(e) + ")", e);
            }
        } else {
            RedisClient rc = RedisClient.create();
            ClientOptions.Builder o = ClientOptions.builder()
                    .autoReconnect(true)
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .timeoutOptions(TimeoutOptions.enabled(timeout))
                    .socketOptions(socket);
            if (ssl != null) {
                o.sslOptions(ssl);
            }
            rc.setOptions(o.build());
            this.client = rc;
            connectAtStart();
        }
    }

    /**
     * Connects to the single server now. One that is away (down, not up yet) is tried again on
     * use; one that answers and refuses these settings (login, ACL, database, TLS) fails the
     * start with the reason: every later command would be refused alike, the tier a silent miss.
     */
    private void connectAtStart() {
        lastConnectTry.set(System.nanoTime());
        try {
            StatefulRedisConnection<String, Object> cn = ((RedisClient) client).connect(CODEC, uris.getFirst());
            var async = cn.async();
            link = new Link(cn, async, async);
        } catch (RuntimeException e) {
            String refusal = RedisRefusal.of(e, describe(e));
            RemoteUrl.HostPort hp = url.hosts().getFirst();
            if (refusal == null && url.tls() && RedisRefusal.speaksPlainResp(hp.host(), hp.port(), timeout)) {
                refusal = RedisRefusal.tlsAdvice(hp + " answers in plain text; " + describe(e));
            }
            if (refusal != null) {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                throw new IllegalArgumentException("remote_url '" + url + "': " + refusal, e);
            }
            c.errors.increment(); // away: tried again on use
        }
    }

    /**
     * What went wrong, from Lettuce's chain of causes and suppressed errors (each node's own),
     * with any password masked: the message goes to the user, whose configuration may be logged.
     */
    private String describe(Throwable e) {
        Set<String> parts = new LinkedHashSet<>();
        collect(e, parts, 0);
        String s = String.join("; ", parts);
        if (password != null && !password.isEmpty()) {
            s = s.replace(password, "***");
        }
        return s;
    }

    private static void collect(Throwable e, Set<String> out, int depth) {
        if (e == null || depth > 8) {
            return;
        }
        if (e.getCause() == null && e.getSuppressed().length == 0 && e.getMessage() != null) {
            out.add(e.getMessage());
        }
        for (Throwable s : e.getSuppressed()) {
            collect(s, out, depth + 1);
        }
        collect(e.getCause(), out, depth + 1);
        if (out.isEmpty() && e.getMessage() != null) {
            out.add(e.getMessage());
        }
    }

    /**
     * Opens the connections to every master (and, reading from replicas, every replica) now.
     * Lettuce opens a cluster node's connection on the first command for it, and refuses the
     * commands that arrive while it is still being opened (REJECT_COMMANDS, which makes a node
     * that is away a miss at once instead of a wait): without this, the first store after the
     * start, or after a replica's promotion, would fail whole.
     */
    private CompletableFuture<Void> warm(StatefulRedisClusterConnection<String, Object> cn) {
        List<CompletableFuture<?>> fs = new ArrayList<>();
        for (RedisClusterNode n : cn.getPartitions()) {
            boolean master = n.is(RedisClusterNode.NodeFlag.UPSTREAM);
            if (master ? n.hasNoSlots() : readFrom == ReadFrom.UPSTREAM) {
                continue;
            }
            try {
                fs.add(cn.getConnectionAsync(n.getUri().getHost(), n.getUri().getPort(),
                        master ? ConnectionIntent.WRITE : ConnectionIntent.READ));
            } catch (RuntimeException e) {
                // a node the topology no longer knows: nothing to open
            }
        }
        return CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new));
    }

    /**
     * After a batch met errors: the topology may have changed (a promoted replica, a node back),
     * so open what it now needs, in the background, at most once per {@link #ADAPTIVE_REFRESH_LIMIT}.
     */
    private void rewarm() {
        long last = lastWarm.get();
        long now = System.nanoTime();
        if (closed || !(link != null && link.conn() instanceof StatefulRedisClusterConnection<String, Object> cn)
                || now - last < ADAPTIVE_REFRESH_LIMIT.toNanos() || !lastWarm.compareAndSet(last, now)) {
            return;
        }
        try {
            warm(cn);
        } catch (RuntimeException e) {
            // closed meanwhile
        }
    }

    /** The connection, or null while a single server is away (tried again at most every 500 ms). */
    private Link link() {
        Link l = link;
        if (l != null || closed || url.isCluster()) {
            return closed ? null : l;
        }
        long last = lastConnectTry.get();
        long now = System.nanoTime();
        if (now - last < RETRY_CONNECT_NANOS || !lastConnectTry.compareAndSet(last, now)) {
            return null;
        }
        synchronized (this) {
            if (link == null && !closed) {
                try {
                    StatefulRedisConnection<String, Object> cn = ((RedisClient) client).connect(CODEC, uris.getFirst());
                    var async = cn.async();
                    link = new Link(cn, async, async);
                } catch (RuntimeException e) {
                    c.errors.increment();
                }
            }
            return link;
        }
    }

    @Override
    public String name() {
        return "redis";
    }

    /**
     * The URL's form.
     *
     * @return true when this tier is a Redis Cluster
     */
    public boolean isCluster() {
        return url.isCluster();
    }

    // ---- waiting for replies -------------------------------------------------------------

    /**
     * The reply of a command sent at {@code sentNanos}, or {@link #FAILED} (counted as an error).
     * A command that is given up on is cancelled: Lettuce then never writes it, so a SET whose
     * payload the caller reuses after this call cannot go out later with other bytes under its
     * header, and a late GET reply lands nowhere.
     */
    private Object await(Future<?> f, long sentNanos) {
        try {
            long left = sentNanos + timeout.toNanos() + GRACE_NANOS - System.nanoTime();
            return f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | java.util.concurrent.CancellationException e) {
            // a refused, failed or timed-out command: a miss, counted below
        }
        f.cancel(false);
        c.errors.increment();
        rewarm();
        return FAILED;
    }

    private static void cancelAll(Future<?>[] fs) {
        for (Future<?> f : fs) {
            if (f != null && !f.isDone()) {
                f.cancel(false);
            }
        }
    }

    // ---- lookups -------------------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key) {
        return containsEach(List.of(key))[0];
    }

    /**
     * Which of {@code keys} the server or cluster holds: every EXISTS sent before any reply is
     * awaited (in a cluster, to each key's shard); a key whose shard is away is not held.
     *
     * @param keys the chunks' keys
     * @return per key, whether it is held
     */
    boolean[] containsEach(List<CacheKey> keys) {
        boolean[] held = new boolean[keys.size()];
        Link l = link();
        if (l == null || keys.isEmpty()) {
            return held;
        }
        @SuppressWarnings("unchecked")
        RedisFuture<Long>[] fs = new RedisFuture[keys.size()];
        long sent = System.nanoTime();
        try {
            for (int i = 0; i < fs.length; i++) {
                fs[i] = l.keys().exists(keys.get(i).toString());
            }
            for (int i = 0; i < fs.length; i++) {
                held[i] = await(fs[i], sent) instanceof Long n && n > 0;
            }
        } catch (RuntimeException e) {
            c.errors.increment(); // a command that could not even be sent
        } finally {
            cancelAll(fs);
        }
        return held;
    }

    // ---- stores --------------------------------------------------------------------------

    @Override
    public boolean put(CacheKey key, KvLayout layout, int tokens, MemorySegment payload) {
        return putAll(layout, List.of(new Put(key, tokens, payload)))[0];
    }

    /**
     * Stores the chunks with one SET each, sent one after another without waiting (at most
     * {@link #WINDOW_BYTES} in flight), then awaited: the round trips overlap, and in a cluster
     * the shards receive their chunks at once. A chunk whose shard fails is a failed store; the
     * others are stored.
     */
    @Override
    public boolean[] putAll(KvLayout layout, List<Put> puts) {
        int n = puts.size();
        boolean[] ok = new boolean[n];
        Link l = link();
        if (l == null || closed) {
            c.failedPuts.add(n);
            return ok;
        }
        @SuppressWarnings("unchecked")
        RedisFuture<String>[] fs = new RedisFuture[n];
        long[] sent = new long[n];
        ArrayDeque<Integer> inFlight = new ArrayDeque<>();
        long bytes = 0;
        try {
            for (int i = 0; i < n; i++) {
                Put p = puts.get(i);
                long len = p.payload().byteSize();
                ChunkCodec.Value v = value(p.key(), layout, p.tokens(), p.payload());
                if (v == null || Thread.currentThread().isInterrupted()) {
                    c.failedPuts.increment();
                    continue;
                }
                while (!inFlight.isEmpty() && bytes + len > WINDOW_BYTES) {
                    int j = inFlight.poll();
                    ok[j] = finishPut(fs[j], sent[j], puts.get(j));
                    bytes -= puts.get(j).payload().byteSize();
                }
                sent[i] = System.nanoTime();
                try {
                    fs[i] = l.strings().set(p.key().toString(), v);
                } catch (RuntimeException e) { // refused before it was queued (closed under us)
                    c.errors.increment();
                    c.failedPuts.increment();
                    continue;
                }
                inFlight.add(i);
                bytes += len;
            }
            while (!inFlight.isEmpty()) {
                int j = inFlight.poll();
                ok[j] = finishPut(fs[j], sent[j], puts.get(j));
            }
        } finally {
            cancelAll(fs);
        }
        return ok;
    }

    private boolean finishPut(RedisFuture<String> f, long sent, Put p) {
        if (await(f, sent) == FAILED) {
            c.failedPuts.increment();
            return false;
        }
        c.puts.increment();
        c.bytesWritten.add(p.payload().byteSize());
        return true;
    }

    /** Header and payload of one SET (copied once, by {@link ChunkCodec}, into Netty's buffer); null when declined. */
    private ChunkCodec.Value value(CacheKey key, KvLayout layout, int tokens, MemorySegment payload) {
        long len = payload.byteSize();
        if (len != layout.bytesPerChunk(tokens) || len > Integer.MAX_VALUE - ChunkFileHeader.SIZE) {
            return null;
        }
        byte[] header = new byte[ChunkFileHeader.SIZE];
        try {
            new ChunkFileHeader(key.toString(), len, ChunkFileHeader.crc(payload), tokens, layout)
                    .encode(MemorySegment.ofArray(header));
        } catch (IllegalArgumentException e) { // key too long for the header
            return null;
        }
        return new ChunkCodec.Value(header, payload);
    }

    // ---- retrieves -----------------------------------------------------------------------

    @Override
    public boolean get(CacheKey key, MemorySegment dst) {
        return getAll(List.of(new Get(key, dst)))[0];
    }

    /**
     * Reads the chunks with one GET each, sent without waiting (at most {@link #WINDOW_BYTES} of
     * replies outstanding), each reply verified and copied out on this thread while later ones
     * are still arriving.
     */
    @Override
    public boolean[] getAll(List<Get> gets) {
        int n = gets.size();
        boolean[] ok = new boolean[n];
        Link l = link();
        if (l == null || closed) {
            c.misses.add(n);
            return ok;
        }
        @SuppressWarnings("unchecked")
        RedisFuture<Object>[] fs = new RedisFuture[n];
        long[] sent = new long[n];
        ArrayDeque<Integer> inFlight = new ArrayDeque<>();
        long bytes = 0;
        try {
            for (int i = 0; i < n; i++) {
                long len = gets.get(i).dst().byteSize() + ChunkFileHeader.SIZE;
                while (!inFlight.isEmpty() && bytes + len > WINDOW_BYTES) {
                    int j = inFlight.poll();
                    ok[j] = finishGet(l, fs[j], sent[j], gets.get(j));
                    bytes -= gets.get(j).dst().byteSize() + ChunkFileHeader.SIZE;
                }
                if (Thread.currentThread().isInterrupted()) {
                    c.misses.increment();
                    continue;
                }
                sent[i] = System.nanoTime();
                try {
                    fs[i] = l.strings().get(gets.get(i).key().toString());
                } catch (RuntimeException e) {
                    c.errors.increment();
                    c.misses.increment();
                    continue;
                }
                inFlight.add(i);
                bytes += len;
            }
            while (!inFlight.isEmpty()) {
                int j = inFlight.poll();
                ok[j] = finishGet(l, fs[j], sent[j], gets.get(j));
            }
        } finally {
            cancelAll(fs);
        }
        return ok;
    }

    private boolean finishGet(Link l, RedisFuture<Object> f, long sent, Get g) {
        Object v = await(f, sent);
        if (v == FAILED || v == null) {
            c.misses.increment();
            return false;
        }
        byte[] value = (byte[]) v;
        MemorySegment dst = g.dst();
        try {
            ChunkFileHeader h = ChunkFileHeader.decode(ByteBuffer.wrap(value));
            long len = dst.byteSize();
            if (!h.key().equals(g.key().toString()) || h.payloadLen() != len || value.length != ChunkFileHeader.SIZE + len) {
                throw new IllegalArgumentException("entry for " + h.key() + " of " + h.payloadLen() + " bytes");
            }
            CRC32C crc = new CRC32C();
            crc.update(value, ChunkFileHeader.SIZE, (int) len);
            if ((int) crc.getValue() != h.payloadCrc()) {
                throw new IllegalArgumentException("payload checksum mismatch");
            }
            MemorySegment.copy(value, ChunkFileHeader.SIZE, dst, ValueLayout.JAVA_BYTE, 0, (int) len);
        } catch (IllegalArgumentException e) {
            c.corrupt.increment();
            c.misses.increment();
            try {
                // not awaited: the entry is a miss either way, and the next store replaces it
                l.keys().del(g.key().toString()).exceptionally(t -> {
                    c.errors.increment();
                    return 0L;
                });
            } catch (RuntimeException ignored) {
                c.errors.increment();
            }
            return false;
        }
        c.hits.increment();
        c.bytesRead.add(dst.byteSize());
        return true;
    }

    @Override
    public void remove(CacheKey key) {
        Link l = link();
        if (l != null) {
            try {
                await(l.keys().del(key.toString()), System.nanoTime());
            } catch (RuntimeException e) {
                c.errors.increment();
            }
        }
    }

    @Override
    public TierStats stats() {
        return c.snapshot(name(), -1, -1, 0);
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        Link l = link;
        if (l != null) {
            l.conn().close();
        }
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    /** Scheme and hosts, never the credentials. */
    @Override
    public String toString() {
        String scheme = (url.tls() ? "rediss" : "redis") + (url.isCluster() ? "-cluster" : "");
        return "RedisTier[" + scheme + "://" + url.hosts().stream().map(RemoteUrl.HostPort::toString)
                .collect(Collectors.joining(",")) + (url.isCluster() ? ", read from " + readFromName : "") + "]";
    }
}
