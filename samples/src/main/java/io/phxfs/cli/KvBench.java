package io.phxfs.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisStringAsyncCommands;
import io.lettuce.core.api.sync.RedisStringCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import io.phxfs.core.Device;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.kvcache.CacheKey;
import io.phxfs.kvcache.ChunkedKv;
import io.phxfs.kvcache.DiskTier;
import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.kvcache.KvCacheEngine;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.RemoteUrl;
import io.phxfs.kvcache.TierStats;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/** The work of {@code phoenix kv bench} and {@code phoenix kv stats}. */
final class KvBench {
    private static final int CHUNK = 256;
    private static final int LOOKUP_TOKENS = 128 * 1024;
    /** slf4j-simple's level for Lettuce's loggers (and Netty's under them, named io.netty: not touched). */
    private static final String LETTUCE_LOG = "org.slf4j.simpleLogger.log.io.lettuce.core";

    private final KvCommand.Bench o;

    KvBench(KvCommand.Bench o) {
        this.o = o;
    }

    private record Rates(double raw, double kv) {
    }

    int run() throws Exception {
        if (o.chunks < 1 || o.chunks > 1 << 16) {
            throw new IllegalArgumentException("--chunks " + o.chunks + ": not in 1..65536");
        }
        if (o.ioThreads < 1 || o.ioThreads > 256) {
            throw new IllegalArgumentException("--io-threads " + o.ioThreads + ": not in 1..256");
        }
        if (o.repeat < 1) {
            throw new IllegalArgumentException("--repeat must be >= 1, was " + o.repeat);
        }
        KvLayout layout = KvLayout.preset(o.layout);
        DiskTier.FsyncPolicy fsync = DiskTier.FsyncPolicy.valueOf(o.fsync.toUpperCase(java.util.Locale.ROOT));
        PrintWriter err = o.spec.commandLine().getErr();
        Progress progress = new Progress(err, o.quiet);
        Path base = o.dir != null ? o.dir : Path.of(System.getProperty("java.io.tmpdir"));
        if (Files.exists(base) && !Files.isDirectory(base)) {
            throw new IllegalArgumentException("--dir " + base + ": not a directory");
        }
        RemoteUrl remote = o.redis == null ? null : redisUrl(o.redis);
        if (remote != null && System.getProperty(LETTUCE_LOG) == null) {
            // Lettuce warns, with a stack trace, of every node it cannot reach or log in to; the
            // tier says so once, in a line naming the URL, and counts the rest in its errors
            System.setProperty(LETTUCE_LOG, "error");
        }
        Phoenix phx = Phoenix.open();
        Device device = o.target.resolve(phx, true);
        if (remote != null && device != null) {
            throw new IllegalArgumentException("--redis compares host memory: use --host");
        }
        o.target.announce(err, o.quiet);
        // opened before the disk runs: an unreachable cluster, a wrong password or a bad
        // certificate end the command at once, not after a minute of disk measurements
        try (KvCacheEngine redisEngine = remote == null ? null : openRedis(layout)) {
            return run(layout, fsync, progress, base, phx, device, remote, redisEngine);
        }
    }

    /** {@code --redis}'s URL, checked; the message names the option, not the setting it becomes. */
    private static RemoteUrl redisUrl(String url) {
        return RemoteUrl.parse(url, "--redis");
    }

    private KvCacheEngine openRedis(KvLayout layout) {
        KvCacheConfig cfg;
        try {
            cfg = KvCacheConfig.builder().localCpu(false).remoteUrl(o.redis)
                    .remoteTimeout(Duration.ofSeconds(30)).ioThreads(o.ioThreads).model("bench").build();
            return new KvCacheEngine(cfg, layout);
        } catch (IllegalArgumentException e) {
            String m = e.getMessage();
            throw new IllegalArgumentException(m.startsWith("remote_url ") ? "--redis " + m.substring(11) : m, e);
        }
    }

    private int run(KvLayout layout, DiskTier.FsyncPolicy fsync, Progress progress, Path base, Phoenix phx, Device device,
                    RemoteUrl remote, KvCacheEngine redisEngine) throws Exception {
        long chunkBytes = layout.bytesPerChunk(CHUNK);
        long bytes = chunkBytes * o.chunks;
        int tokens = CHUNK * o.chunks;
        // the directory named is made when missing; what this run made of it goes again at the end
        // if empty (on Ctrl-C too), unless --keep leaves chunks in it
        List<Path> madeDirs;
        try {
            madeDirs = TempFiles.createDirectories(base, Thread.currentThread());
        } catch (IOException e) {
            throw io.phxfs.core.FileOperationException.of("create --dir", base, e);
        }
        // Ctrl-C deletes the run's work directory (TempFiles' hook); --keep keeps its tier
        Path work;
        try {
            work = TempFiles.track(Files.createTempDirectory(base, "phoenix-kv-bench-"), Thread.currentThread());
        } catch (IOException | RuntimeException e) {
            TempFiles.removeMade(madeDirs);
            throw e;
        }
        boolean keep = o.keep;
        boolean kept = false;
        double storeGbps;
        double retrieveGbps;
        double rawWrite;
        double rawRead;
        double lookupUs;
        Map<String, Double> redisFigures = new java.util.LinkedHashMap<>();
        try (RegisteredBuffer buf = device == null ? phx.host().allocate(bytes) : device.allocate(bytes)) {
            progress.step("%s: %d chunks of %s = %s in %s, %s", layout.describe(), o.chunks, LoadCommand.human(chunkBytes),
                    LoadCommand.human(bytes), device == null ? "host memory" : device.toString(), work);
            fillRandom(phx, buf, 1);
            long want = checksum(phx, buf);
            KvCacheConfig cfg = KvCacheConfig.builder().localCpu(false).localDisk(work.resolve("tier"))
                    .maxLocalDiskBytes(3 * (bytes + o.chunks * 4096L) + (1L << 20)).diskMinFreeBytes(0).fsync(fsync)
                    .ioThreads(o.ioThreads).model("bench").build();
            Path raw = work.resolve("raw.bin");
            double[] rw = new double[o.repeat];
            double[] st = new double[o.repeat];
            double[] rr = new double[o.repeat];
            double[] rt = new double[o.repeat];
            try (KvCacheEngine engine = new KvCacheEngine(cfg, layout)) {
                ChunkedKv kv = new ChunkedKv(buf, layout, CHUNK);
                // untimed warm-up of both paths: staging buffers, JIT, the first open of each kind
                int[] warm = randomTokens(CHUNK * Math.min(o.chunks, 4), 99);
                rawWrite(buf, raw, DiskTier.FsyncPolicy.NONE);
                rawRead(buf, raw);
                engine.store(warm, kv);
                engine.retrieve(warm, kv);
                for (byte[] h : new io.phxfs.kvcache.ChunkHasher(CHUNK, null).hashes(warm, warm.length / CHUNK)) {
                    engine.tiers().forEach(t -> t.remove(engine.key(h))); // only the runs' chunks stay with --keep
                }
                for (int r = 0; r < o.repeat; r++) {
                    int[] prompt = randomTokens(tokens, 100 + r);
                    // the order alternates between runs, so that a drift of the disk or the machine
                    // (a write-back still draining, another process) does not always favour one side
                    boolean tierFirst = r % 2 == 1;
                    for (int side = 0; side < 2; side++) {
                        if ((side == 0) != tierFirst) {
                            rw[r] = rawWrite(buf, raw, fsync);
                        } else {
                            long t0 = System.nanoTime();
                            int n = engine.store(prompt, kv);
                            st[r] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                            if (n != tokens) {
                                throw new IllegalStateException("the disk tier stored " + n + " of " + tokens
                                        + " tokens: " + engine.metrics().tier("disk"));
                            }
                        }
                    }
                    for (int side = 0; side < 2; side++) {
                        if ((side == 0) != tierFirst) {
                            rr[r] = rawRead(buf, raw);
                        } else {
                            long t0 = System.nanoTime();
                            int n = engine.retrieve(prompt, kv);
                            rt[r] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                            if (n != tokens || checksum(phx, buf) != want) {
                                throw new IllegalStateException("retrieve returned " + n + " of " + tokens
                                        + " tokens or wrong bytes: " + engine.metrics().tier("disk"));
                            }
                        }
                    }
                    // untimed, like the raw file's deletion before its next write: the next run's
                    // store then writes into free space too, instead of paying for evictions
                    byte[][] hashes = new io.phxfs.kvcache.ChunkHasher(CHUNK, null).hashes(prompt, o.chunks);
                    if (!(keep && r == o.repeat - 1)) {
                        for (byte[] h : hashes) {
                            engine.tiers().forEach(t -> t.remove(engine.key(h)));
                        }
                    }
                    progress.step("run %d/%d: raw write %.2f GB/s, store %.2f GB/s, raw read %.2f GB/s, retrieve %.2f GB/s",
                            r + 1, o.repeat, rw[r], st[r], rr[r], rt[r]);
                }
            }
            rawWrite = median(rw);
            storeGbps = median(st);
            rawRead = median(rr);
            retrieveGbps = median(rt);
            Files.deleteIfExists(raw);
            lookupUs = lookup(work.resolve("lookup"), progress);
            if (redisEngine != null) {
                redis(layout, buf, remote, redisEngine, redisFigures, progress);
            }
            if (keep) {
                deleteTree(work.resolve("lookup"));
                Files.deleteIfExists(work.resolve("raw.bin"));
                kept = true;
                TempFiles.untrack(work);
                progress.step("kept the last run's %d chunks in %s (phoenix kv stats %s)", o.chunks, work.resolve("tier"),
                        work.resolve("tier"));
            }
        } finally {
            if (!kept) {
                deleteTree(work);
                TempFiles.untrack(work);
            }
            if (kept) {
                madeDirs.forEach(TempFiles::untrack);
            } else {
                TempFiles.removeMade(madeDirs);
            }
        }
        if (o.json) {
            PrintWriter out = o.spec.commandLine().getOut();
            JsonGenerator g = new JsonFactory().createGenerator(out);
            g.useDefaultPrettyPrinter(); // as load, bench and load-bench print theirs
            g.writeStartObject();
            g.writeStringField("layout", o.layout);
            g.writeNumberField("chunks", o.chunks);
            g.writeNumberField("bytes", bytes);
            g.writeNumberField("store_gb_per_s", round(storeGbps));
            g.writeNumberField("retrieve_gb_per_s", round(retrieveGbps));
            g.writeNumberField("raw_write_gb_per_s", round(rawWrite));
            g.writeNumberField("raw_read_gb_per_s", round(rawRead));
            g.writeNumberField("lookup_us_128k", round(lookupUs));
            for (var e : redisFigures.entrySet()) {
                g.writeNumberField(e.getKey(), round(e.getValue()));
            }
            if (remote != null) {
                g.writeStringField("redis_baseline", remote.isCluster() ? "cluster-async" : "sync");
            }
            g.writeEndObject();
            g.flush();
            out.println();
            out.flush();
        } else {
            PrintWriter out = o.spec.commandLine().getOut();
            out.printf("layout %s, %d chunks, %s, target %s%n", o.layout, o.chunks, LoadCommand.human(bytes),
                    device == null ? "host memory" : device.toString());
            out.printf("store    %7.2f GB/s   raw write %7.2f GB/s   ratio %.2f%n", storeGbps, rawWrite, storeGbps / rawWrite);
            out.printf("retrieve %7.2f GB/s   raw read  %7.2f GB/s   ratio %.2f%n", retrieveGbps, rawRead, retrieveGbps / rawRead);
            out.printf("lookup of a %d-token prompt: %.1f us%n", LOOKUP_TOKENS, lookupUs);
            if (!redisFigures.isEmpty()) {
                String what = remote.isCluster() ? "redis cluster" : "redis";
                String set = remote.isCluster() ? "lettuce cluster SET (async)" : "lettuce SET";
                String get = remote.isCluster() ? "GET (async)" : "GET";
                out.printf("%s store %.2f GB/s vs %s %.2f GB/s (ratio %.2f); retrieve %.2f GB/s vs %s %.2f GB/s (ratio %.2f)%n",
                        what, redisFigures.get("redis_store_gb_per_s"), set, redisFigures.get("lettuce_set_gb_per_s"),
                        redisFigures.get("redis_store_ratio"), redisFigures.get("redis_retrieve_gb_per_s"), get,
                        redisFigures.get("lettuce_get_gb_per_s"), redisFigures.get("redis_retrieve_ratio"));
            }
            out.flush();
        }
        return 0;
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static int[] randomTokens(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = r.nextInt(128_000);
        }
        return t;
    }

    /** Random bytes into the buffer, through a host block where Java cannot touch it. */
    private static void fillRandom(Phoenix phx, RegisteredBuffer buf, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long block = 16L << 20;
        MemorySegment tmp = java.lang.foreign.Arena.ofAuto().allocate(Math.min(block, buf.size()), 4096);
        for (long off = 0; off < buf.size(); off += block) {
            long n = Math.min(block, buf.size() - off);
            MemorySegment t = tmp.asSlice(0, n);
            for (long i = 0; i + 8 <= n; i += 8) {
                t.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
            }
            if (buf.segment().isPresent()) {
                MemorySegment.copy(t, 0, buf.segment().get(), off, n);
            } else {
                phx.device(buf.deviceId()).copyToDevice(t, buf, off);
            }
        }
    }

    private static long checksum(Phoenix phx, RegisteredBuffer buf) {
        CRC32C c = new CRC32C();
        long block = 16L << 20;
        MemorySegment tmp = buf.segment().isPresent() ? null
                : java.lang.foreign.Arena.ofAuto().allocate(Math.min(block, buf.size()), 4096);
        for (long off = 0; off < buf.size(); off += block) {
            long n = Math.min(block, buf.size() - off);
            MemorySegment s;
            if (tmp == null) {
                s = buf.segment().get().asSlice(off, n);
            } else {
                s = tmp.asSlice(0, n);
                phx.device(buf.deviceId()).copyToHost(buf, off, s);
            }
            c.update(s.asByteBuffer());
        }
        return c.getValue();
    }

    /**
     * One file of the same bytes, synced as the tier's policy syncs one store: {@code file}
     * syncs the file once after its write (the tier syncs each chunk file of the store before
     * its rename, the files of one store together), {@code full} syncs the directory after
     * that too (as the tier does once per store, after the renames), {@code none} neither.
     */
    private static double rawWrite(RegisteredBuffer buf, Path raw, DiskTier.FsyncPolicy sync) throws IOException {
        Files.deleteIfExists(raw);
        long t0 = System.nanoTime();
        try (PhxFile f = PhxFile.open(raw, OpenMode.WRITE, OpenMode.CREATE, OpenMode.TRUNCATE, OpenMode.DIRECT)) {
            long n = f.write(buf, 0, buf.size(), 0);
            if (n != buf.size()) {
                throw new IOException("short write to " + raw + ": " + n + " of " + buf.size());
            }
            if (sync != DiskTier.FsyncPolicy.NONE) {
                try (FileChannel ch = FileChannel.open(raw, StandardOpenOption.WRITE)) {
                    ch.force(true);
                }
            }
        }
        if (sync == DiskTier.FsyncPolicy.FULL) {
            try (FileChannel d = FileChannel.open(raw.getParent(), StandardOpenOption.READ)) {
                d.force(true);
            }
        }
        return buf.size() / ((System.nanoTime() - t0) / 1e9) / 1e9;
    }

    private static double rawRead(RegisteredBuffer buf, Path raw) throws IOException {
        long t0 = System.nanoTime();
        try (PhxFile f = PhxFile.open(raw, OpenMode.READ, OpenMode.DIRECT)) {
            long n = f.read(buf, 0, buf.size(), 0);
            if (n != buf.size()) {
                throw new IOException("short read of " + raw + ": " + n + " of " + buf.size());
            }
        }
        return buf.size() / ((System.nanoTime() - t0) / 1e9) / 1e9;
    }

    /**
     * Median time to look up a 128k-token prompt whose 512 chunks are all held (in the disk
     * tier's index, behind an empty memory tier): hashing every chunk plus the index probes.
     */
    private static double lookup(Path dir, Progress progress) {
        KvLayout tiny = KvLayout.preset("tiny-llama");
        int chunks = LOOKUP_TOKENS / CHUNK;
        KvCacheConfig cfg = KvCacheConfig.builder().localCpu(true).maxLocalCpuBytes(tiny.bytesPerChunk(CHUNK))
                .localDisk(dir).maxLocalDiskBytes(1L << 30).diskMinFreeBytes(0).fsync(DiskTier.FsyncPolicy.NONE)
                .model("bench").build();
        int[] prompt = randomTokens(LOOKUP_TOKENS, 7);
        try (KvCacheEngine e = new KvCacheEngine(cfg, tiny);
             RegisteredBuffer b = Phoenix.open().host().allocate(tiny.bytesPerChunk(LOOKUP_TOKENS))) {
            int n = e.store(prompt, new ChunkedKv(b, tiny, CHUNK));
            e.flush();
            if (n != LOOKUP_TOKENS || e.lookup(prompt) != LOOKUP_TOKENS) {
                throw new IllegalStateException("lookup setup stored " + n + " tokens, looks up " + e.lookup(prompt));
            }
            double[] us = new double[200];
            // warm-up until the JIT has compiled the hashing and the index probes: counted in
            // lookups, not time (one second was not enough on a 2-core machine, where the compiler
            // threads share the cores: the median was still 2.5x the steady state), at most 10 s
            long warmEnd = System.nanoTime() + 10_000_000_000L;
            for (int i = 0; i < 3000 && System.nanoTime() < warmEnd; i++) {
                e.lookup(prompt);
            }
            for (int i = 0; i < us.length; i++) {
                long t0 = System.nanoTime();
                int got = e.lookup(prompt);
                us[i] = (System.nanoTime() - t0) / 1e3;
                if (got != LOOKUP_TOKENS) {
                    throw new IllegalStateException("lookup found " + got);
                }
            }
            double m = median(us);
            progress.step("lookup of %d tokens (%d chunks held): %.1f us (median of %d)", LOOKUP_TOKENS, chunks, m, us.length);
            return m;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }

    /**
     * The Redis tier against plain Lettuce SET/GET of the same chunk bytes, on the same server or
     * cluster. On one server the plain side is a synchronous loop, as a user would write it; on
     * a cluster it is Lettuce's own cluster client at its best, every SET (then every GET) sent
     * asynchronously before any reply is awaited, as the tier pipelines them. The plain keys
     * carry the tier's key as a hash tag, so that in a cluster each lands on the same shard as
     * the tier's chunk of the same bytes.
     */
    private void redis(KvLayout layout, RegisteredBuffer host, RemoteUrl remote, KvCacheEngine e, Map<String, Double> out,
                       Progress progress) throws Exception {
        long chunkBytes = layout.bytesPerChunk(CHUNK);
        int chunks = o.chunks;
        long bytes = chunkBytes * chunks;
        double[] ts = new double[o.repeat];
        double[] tr = new double[o.repeat];
        double[] ps = new double[o.repeat];
        double[] pg = new double[o.repeat];
        boolean cluster = remote.isCluster();
        Duration timeout = Duration.ofSeconds(30);
        List<RedisURI> uris = remote.redisUris(null, null, timeout);
        AbstractRedisClient client = cluster
                ? RedisClusterClient.create(uris) : RedisClient.create(uris.getFirst());
        RedisCodec<String, byte[]> codec = RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE);
        try (StatefulConnection<String, byte[]> c = cluster
                ? ((RedisClusterClient) client).connect(codec)
                : ((RedisClient) client).connect(codec)) {
            Plain plain = new Plain(c);
            ChunkedKv kv = new ChunkedKv(host, layout, CHUNK);
            byte[][] values = new byte[chunks][];
            // untimed warm-up of both sides: connections to every node, the JIT, the servers' allocators
            int[] warm = randomTokens(CHUNK * Math.min(chunks, 2), 499);
            String[] warmKeys = new String[warm.length / CHUNK];
            for (int i = 0; i < warmKeys.length; i++) {
                warmKeys[i] = "plain:{" + e.key(hashOf(warm, i)) + "}";
                values[i] = host.segment().get().asSlice(i * chunkBytes, chunkBytes).toArray(ValueLayout.JAVA_BYTE);
            }
            plain.set(warmKeys, values, cluster);
            plain.get(warmKeys, values, cluster);
            e.store(warm, kv);
            e.retrieve(warm, kv);
            for (int i = 0; i < warmKeys.length; i++) {
                plain.del(warmKeys[i]);
                e.tiers().getFirst().remove(e.key(hashOf(warm, i)));
            }
            plain.settle();
            for (int r = 0; r < o.repeat; r++) {
                int[] prompt = randomTokens(CHUNK * chunks, 500 + r);
                String[] keys = new String[chunks];
                // plain: the same bytes as byte[] (copied out of the buffer beforehand, not timed)
                for (int i = 0; i < chunks; i++) {
                    values[i] = host.segment().get().asSlice(i * chunkBytes, chunkBytes).toArray(ValueLayout.JAVA_BYTE);
                    keys[i] = "plain:{" + e.key(hashOf(prompt, i)) + "}";
                }
                // the order alternates between runs, so that a drift of the server or the machine
                // during a run does not always favour the same side; each side starts from the
                // same state: the other's keys deleted, and (in a cluster) every replica caught up
                // with its master, whose copying of 2 x 512 MiB otherwise slowed the second side
                int n = 0;
                int m = 0;
                for (int side = 0; side < 2; side++) {
                    if ((side + r) % 2 == 0) {
                        long t0 = System.nanoTime();
                        plain.set(keys, values, cluster);
                        ps[r] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                        t0 = System.nanoTime();
                        plain.get(keys, values, cluster);
                        pg[r] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                        for (int i = 0; i < chunks; i++) {
                            if (!Arrays.equals(values[i],
                                    host.segment().get().asSlice(i * chunkBytes, chunkBytes).toArray(ValueLayout.JAVA_BYTE))) {
                                throw new IllegalStateException("plain GET of chunk " + i + " returned other bytes");
                            }
                            plain.del(keys[i]);
                        }
                    } else {
                        long t0 = System.nanoTime();
                        n = e.store(prompt, kv);
                        ts[r] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                        t0 = System.nanoTime();
                        m = e.retrieve(prompt, kv);
                        tr[r] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                        for (int i = 0; i < chunks; i++) {
                            e.tiers().getFirst().remove(e.key(hashOf(prompt, i)));
                        }
                    }
                    plain.settle();
                }
                if (n != CHUNK * chunks || m != n) {
                    throw new IllegalStateException("redis tier stored " + n + ", retrieved " + m + ": "
                            + e.metrics().tier("redis"));
                }
                progress.step("redis%s run %d/%d: SET %.2f GB/s, tier store %.2f GB/s, GET %.2f GB/s, tier retrieve %.2f GB/s",
                        cluster ? " cluster" : "", r + 1, o.repeat, ps[r], ts[r], pg[r], tr[r]);
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        out.put("redis_store_gb_per_s", median(ts));
        out.put("redis_retrieve_gb_per_s", median(tr));
        out.put("lettuce_set_gb_per_s", median(ps));
        out.put("lettuce_get_gb_per_s", median(pg));
        // the median of the runs' ratios: each run times both sides back to back, so a drift of the
        // machine between runs cancels out of a run's ratio, not out of the ratio of the medians
        double[] sr = new double[o.repeat];
        double[] rr = new double[o.repeat];
        for (int r = 0; r < o.repeat; r++) {
            sr[r] = ts[r] / ps[r];
            rr[r] = tr[r] / pg[r];
        }
        out.put("redis_store_ratio", median(sr));
        out.put("redis_retrieve_ratio", median(rr));
    }

    /** Plain Lettuce on one server's connection or a cluster's, by the interfaces both share. */
    private record Plain(StatefulConnection<String, byte[]> c) {
        @SuppressWarnings("unchecked")
        private RedisStringAsyncCommands<String, byte[]> async() {
            return c instanceof StatefulRedisConnection<String, byte[]> s ? s.async()
                    : ((StatefulRedisClusterConnection<String, byte[]>) c).async();
        }

        private RedisStringCommands<String, byte[]> sync() {
            return c instanceof StatefulRedisConnection<String, byte[]> s ? s.sync()
                    : ((StatefulRedisClusterConnection<String, byte[]>) c).sync();
        }

        void set(String[] keys, byte[][] values, boolean pipelined) throws Exception {
            if (!pipelined) {
                for (int i = 0; i < keys.length; i++) {
                    sync().set(keys[i], values[i]);
                }
                return;
            }
            List<RedisFuture<String>> fs = new ArrayList<>(keys.length);
            for (int i = 0; i < keys.length; i++) {
                fs.add(async().set(keys[i], values[i]));
            }
            for (var f : fs) {
                f.get();
            }
        }

        void get(String[] keys, byte[][] values, boolean pipelined) throws Exception {
            if (!pipelined) {
                for (int i = 0; i < keys.length; i++) {
                    values[i] = sync().get(keys[i]);
                }
                return;
            }
            List<RedisFuture<byte[]>> fs = new ArrayList<>(keys.length);
            for (String k : keys) {
                fs.add(async().get(k));
            }
            for (int i = 0; i < keys.length; i++) {
                values[i] = fs.get(i).get();
            }
        }

        /** In a cluster: waits until every master's replicas have acknowledged all its writes (WAIT). */
        void settle() {
            if (!(c instanceof StatefulRedisClusterConnection<String, byte[]> cn)) {
                return;
            }
            var nodes = cn.getPartitions();
            for (var n : nodes) {
                if (n.is(io.lettuce.core.cluster.models.partitions.RedisClusterNode.NodeFlag.UPSTREAM)) {
                    long replicas = nodes.stream().filter(x -> n.getNodeId().equals(x.getSlaveOf())).count();
                    if (replicas > 0) {
                        cn.getConnection(n.getNodeId()).sync().waitForReplication((int) replicas, 60_000);
                    }
                }
            }
        }

        void del(String key) {
            if (c instanceof StatefulRedisConnection<String, byte[]> s) {
                s.sync().del(key);
            } else {
                ((StatefulRedisClusterConnection<String, byte[]>) c).sync().del(key);
            }
        }
    }

    private static byte[] hashOf(int[] prompt, int chunk) {
        return new io.phxfs.kvcache.ChunkHasher(CHUNK, null).hashes(prompt, chunk + 1)[chunk];
    }

    private static List<Path> subdirectoriesWithChunks(Path dir) throws IOException {
        List<Path> found = new ArrayList<>();
        try (var subs = Files.list(dir)) {
            for (Path sub : subs.filter(Files::isDirectory).sorted().toList()) {
                try (var files = Files.list(sub)) {
                    if (files.anyMatch(f -> f.getFileName().toString().endsWith(".kv"))) {
                        found.add(sub);
                    }
                } catch (IOException ignored) {
                    // unreadable: not ours to report
                }
            }
        }
        return found;
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (var s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }

    static int stats(KvCommand.Stats o) throws IOException {
        try (DiskTier d = DiskTier.openReadOnly(o.dir)) {
            TierStats s = d.stats();
            Map<String, Integer> models = new TreeMap<>();
            for (String k : d.keys()) {
                CacheKey key = CacheKey.parse(k);
                models.merge(key.model() + " (" + key.dtype() + ", world " + key.worldSize() + ")", 1, Integer::sum);
            }
            PrintWriter out = o.spec.commandLine().getOut();
            if (o.json) {
                JsonGenerator g = new JsonFactory().createGenerator(out);
                g.useDefaultPrettyPrinter();
                g.writeStartObject();
                g.writeStringField("dir", o.dir.toString());
                g.writeNumberField("chunks", s.entries());
                g.writeNumberField("bytes", s.bytesUsed());
                g.writeNumberField("corrupt", s.corrupt());
                g.writeNumberField("temporaries", d.removedTemporaries());
                g.writeNumberField("unreadable", d.unreadableFiles());
                g.writeNumberField("scan_ms", d.startupNanos() / 1e6);
                if (d.heldBy() == null) {
                    g.writeNullField("held_by");
                } else {
                    g.writeStringField("held_by", d.heldBy());
                }
                g.writeObjectFieldStart("models");
                for (var e : models.entrySet()) {
                    g.writeNumberField(e.getKey(), e.getValue());
                }
                g.writeEndObject();
                g.writeEndObject();
                g.flush();
                out.println();
            } else {
                out.printf("%s: %d chunks, %s; %d damaged, torn or foreign files; %d temporaries of interrupted stores"
                        + " (index rebuilt in %.1f ms)%n", o.dir, s.entries(), LoadCommand.human(s.bytesUsed()), s.corrupt(),
                        d.removedTemporaries(), d.startupNanos() / 1e6);
                if (d.unreadableFiles() > 0) {
                    out.printf("  %d chunk files this user may not read (permission denied): run as the directory's"
                            + " owner to see them%n", d.unreadableFiles());
                }
                if (d.heldBy() != null) {
                    out.printf("  in use by %s: the temporaries may be its stores under way, and it may change the"
                            + " directory while this reads%n", d.heldBy());
                }
                List<String> lines = new ArrayList<>();
                models.forEach((m, n) -> lines.add("  " + m + ": " + n + " chunks"));
                lines.forEach(out::println);
                if (s.entries() == 0) {
                    // a kv bench folder (--keep) holds its tier in tier/: point there instead of a bare 0
                    for (Path sub : subdirectoriesWithChunks(o.dir)) {
                        out.printf("  no chunks directly in %s, but %s holds some: phoenix kv stats %s%n", o.dir, sub, sub);
                    }
                }
            }
            out.flush();
        }
        return 0;
    }
}
