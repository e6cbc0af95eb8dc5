package io.phxfs.kvcache;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * A Redis server through Lettuce ({@code redis://host:port}, {@code rediss://} for TLS, a
 * password as {@code redis://:secret@host:port} or given apart). Each chunk is one value, the
 * same 4 KiB {@link ChunkFileHeader header} as a chunk file followed by the payload, written with
 * one SET: a reader sees all of an entry or nothing, and checks key, layout, length and CRC32C
 * before it copies a byte out.
 *
 * <p>An unreachable or failing server is a miss or a failed store, counted, never an exception
 * to the caller: commands are refused at once while the connection is down (Lettuce reconnects
 * in the background) and time out after the configured limit otherwise.
 */
public final class RedisTier implements KvTier {
    private static final ChunkCodec CODEC = new ChunkCodec();
    private static final long RETRY_CONNECT_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final RedisURI uri;
    private final RedisClient client;
    private final Duration timeout;
    private final Counters c = new Counters();
    private final AtomicLong lastConnectTry = new AtomicLong(System.nanoTime() - RETRY_CONNECT_NANOS);
    private volatile StatefulRedisConnection<String, Object> conn;
    private volatile boolean closed;

    /**
     * Connects to {@code url} (lazily again whenever the server is away).
     *
     * @param url      {@code redis://[[user]:password@]host:port[/db]} or {@code rediss://...}
     * @param username ACL user, or null
     * @param password password, or null (one in the URL counts too)
     * @param timeout  per-command limit
     * @throws IllegalArgumentException naming the URL when it cannot be parsed
     */
    public RedisTier(String url, String username, String password, Duration timeout) {
        RedisURI u;
        try {
            u = RedisURI.create(url);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("remote_url '" + url + "': " + e.getMessage(), e);
        }
        if (password != null) {
            u.setCredentialsProvider(io.lettuce.core.RedisCredentialsProvider.from(
                    () -> io.lettuce.core.RedisCredentials.just(username, password)));
        }
        u.setTimeout(timeout);
        this.uri = u;
        this.timeout = timeout;
        this.client = RedisClient.create();
        client.setOptions(ClientOptions.builder()
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(timeout))
                .build());
        connection(); // try now; a server that is not up yet is tried again on use
    }

    private StatefulRedisConnection<String, Object> connection() {
        StatefulRedisConnection<String, Object> cn = conn;
        if (cn != null || closed) {
            return cn;
        }
        long last = lastConnectTry.get();
        long now = System.nanoTime();
        if (now - last < RETRY_CONNECT_NANOS || !lastConnectTry.compareAndSet(last, now)) {
            return null;
        }
        synchronized (this) {
            if (conn == null && !closed) {
                try {
                    conn = client.connect(CODEC, uri);
                } catch (RuntimeException e) {
                    c.errors.increment();
                }
            }
            return conn;
        }
    }

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public boolean contains(CacheKey key) {
        var cn = connection();
        if (cn == null) {
            return false;
        }
        try {
            return cn.sync().exists(key.toString()) > 0;
        } catch (RuntimeException e) {
            c.errors.increment();
            return false;
        }
    }

    /** Which of {@code keys} the server holds: one pipelined round trip; all false when unreachable. */
    boolean[] containsEach(List<CacheKey> keys) {
        boolean[] held = new boolean[keys.size()];
        var cn = connection();
        if (cn == null || keys.isEmpty()) {
            return held;
        }
        try {
            List<RedisFuture<Long>> fs = new ArrayList<>(keys.size());
            var async = cn.async();
            for (CacheKey k : keys) {
                fs.add(async.exists(k.toString()));
            }
            for (int i = 0; i < held.length; i++) {
                held[i] = fs.get(i).get(timeout.toMillis(), TimeUnit.MILLISECONDS) > 0;
            }
            return held;
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            c.errors.increment();
            return new boolean[keys.size()];
        }
    }

    @Override
    public boolean put(CacheKey key, KvLayout layout, int tokens, MemorySegment payload) {
        var cn = connection();
        long len = payload.byteSize();
        if (cn == null || closed || len != layout.bytesPerChunk(tokens) || len > Integer.MAX_VALUE - ChunkFileHeader.SIZE) {
            c.failedPuts.increment();
            return false;
        }
        // header and payload are copied once, straight into Netty's buffer, by ChunkCodec
        byte[] header = new byte[ChunkFileHeader.SIZE];
        try {
            new ChunkFileHeader(key.toString(), len, ChunkFileHeader.crc(payload), tokens, layout)
                    .encode(MemorySegment.ofArray(header));
        } catch (IllegalArgumentException e) { // key too long for the header
            c.failedPuts.increment();
            return false;
        }
        ChunkCodec.Value value = new ChunkCodec.Value(header, payload);
        try {
            cn.sync().set(key.toString(), value);
            c.puts.increment();
            c.bytesWritten.add(len);
            return true;
        } catch (RuntimeException e) {
            c.errors.increment();
            c.failedPuts.increment();
            return false;
        }
    }

    @Override
    public boolean get(CacheKey key, MemorySegment dst) {
        var cn = connection();
        if (cn == null || closed) {
            c.misses.increment();
            return false;
        }
        byte[] value;
        try {
            value = (byte[]) cn.sync().get(key.toString());
        } catch (RuntimeException e) {
            c.errors.increment();
            c.misses.increment();
            return false;
        }
        if (value == null) {
            c.misses.increment();
            return false;
        }
        try {
            ChunkFileHeader h = ChunkFileHeader.decode(ByteBuffer.wrap(value));
            long len = dst.byteSize();
            if (!h.key().equals(key.toString()) || h.payloadLen() != len || value.length != ChunkFileHeader.SIZE + len) {
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
                cn.sync().del(key.toString());
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
        var cn = connection();
        if (cn != null) {
            try {
                cn.sync().del(key.toString());
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
        var cn = conn;
        if (cn != null) {
            cn.close();
        }
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    @Override
    public String toString() {
        return "RedisTier[" + uri.getHost() + ":" + uri.getPort() + "]";
    }
}
