package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Settings a demanding user writes: thread counts out of all proportion, values in LMCache's
 * forms (quoted numbers, {@code True}), LMCache's own configuration files and its
 * {@code LMCACHE_*} environment, LMCache settings this tier does not implement.
 */
class SettingsLimitsTest {
    @TempDir
    Path tmp;

    private KvCacheConfig load(String yaml) throws Exception {
        return KvCacheConfig.load(Files.writeString(tmp.resolve("kv.yaml"), yaml));
    }

    private String refusal(String yaml) throws Exception {
        Path f = Files.writeString(tmp.resolve("kv.yaml"), yaml);
        var e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(f), yaml);
        assertTrue(e.getMessage().startsWith(f + ": "), e.getMessage());
        return e.getMessage();
    }

    @Test
    void ioThreadsOutOfAllProportionIsASettingsErrorNamingTheRange() throws Exception {
        // 100000 started 100000 write-behind threads with the engine (and a pinned staging buffer
        // of a chunk for each); now the bound is named
        for (String v : new String[] {"100000", "257", "0", "-3"}) {
            String m = refusal("io_threads: " + v + "\n");
            assertTrue(m.contains("io_threads must be from 1 to 256, was " + v), m);
        }
        for (String v : new String[] {"4.5", "many", "1e5", "99999999999"}) {
            String m = refusal("io_threads: " + v + "\n");
            assertTrue(m.contains("io_threads: expected an integer"), m);
        }
        var e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.builder().ioThreads(100_000).build());
        assertEquals("io_threads must be from 1 to 256, was 100000", e.getMessage());
        assertEquals(256, load("io_threads: 256\n").ioThreads());
        assertEquals(8, load("io_threads: \"8\"\n").ioThreads(), "a quoted integer, as LMCache's int() takes it");
    }

    @Test
    void anEngineAtTheMostIoThreadsStartsThatManyWritersAndStopsThem() throws Exception {
        KvCacheConfig c = KvCacheConfig.builder().maxLocalCpuBytes(8L << 20).localDisk(tmp.resolve("d"))
                .maxLocalDiskBytes(64L << 20).diskMinFreeBytes(0).ioThreads(KvCacheConfig.MAX_IO_THREADS).model("t").build();
        long before = writers();
        try (KvCacheEngine e = new KvCacheEngine(c, KvLayout.preset("tiny-llama"))) {
            assertEquals(KvCacheConfig.MAX_IO_THREADS, writers() - before);
        }
        assertEquals(before, writers(), "stopped at close");
    }

    private static long writers() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("kvcache-write-behind")).count();
    }

    @Test
    void stagingBuffersAreAllocatedAsUsesOverlapNotAllAtTheFirst() throws Exception {
        // io_threads + 2 pinned buffers of a chunk each were allocated at the first use: 258 of
        // a 40 MiB chunk is 10 GiB pinned for one device store
        try (StagingPool p = new StagingPool(1 << 20, 258)) {
            try (StagingPool.Lease a = p.take()) {
                assertEquals(1 << 20, a.segment().byteSize());
            }
            try (StagingPool.Lease a = p.take()) {
                assertEquals(1, p.allocated(), "the freed buffer is reused");
            }
            List<StagingPool.Lease> held = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                held.add(p.take());
            }
            assertEquals(3, p.allocated());
            held.forEach(StagingPool.Lease::close);
        }
    }

    @Test
    void anLmcacheConfigurationFileLoads() throws Exception {
        // LMCache's documented local-storage example, with the keys its examples carry beside it
        Path dir = tmp.resolve("local_disk");
        KvCacheConfig c = load("""
                # 256 Tokens per KV Chunk
                chunk_size: 256
                local_cpu: True
                max_local_cpu_size: "5.0"
                local_disk: "file://%s/"
                max_local_disk_size: 5.0
                remote_url: "redis://localhost:65432"
                remote_serde: "naive"
                use_layerwise: False
                enable_blending: false
                save_unfull_chunk: "False"
                cache_policy: "LRU"
                extra_config: {'use_odirect': True}
                """.formatted(dir));
        assertEquals(256, c.chunkSize());
        assertTrue(c.localCpu());
        assertEquals(5_000_000_000L, c.maxLocalCpuBytes());
        assertEquals(dir, c.localDisk());
        assertEquals(5_000_000_000L, c.maxLocalDiskBytes());
        assertFalse(c.saveUnfullChunk());
        assertEquals("redis://localhost:65432", c.remoteUrl());
        assertEquals(128, load("chunk_size: \"128\"\n").chunkSize());
        assertTrue(load("save_unfull_chunk: 1\n").saveUnfullChunk());
    }

    @Test
    void lmcacheSettingsThisTierDoesNotImplementAreRefusedByName() throws Exception {
        String m = refusal("remote_serde: \"cachegen\"\n");
        assertTrue(m.contains("'remote_serde' is an LMCache setting this tier does not implement")
                && m.contains("only naive is accepted"), m);
        m = refusal("use_layerwise: true\n");
        assertTrue(m.contains("'use_layerwise' is an LMCache setting") && m.contains("layer by layer"), m);
        m = refusal("extra_config: {'use_odirect': True, 'save_chunk_meta': False}\n");
        assertTrue(m.contains("'extra_config'") && m.contains("use_odirect: true"), m);
        m = refusal("gds_path: \"/mnt/gds\"\n");
        assertTrue(m.contains("'gds_path' is an LMCache setting") && m.contains("GPUDirect"), m);
        m = refusal("chunk_sise: 64\n");
        assertTrue(m.contains("unknown setting 'chunk_sise'"), m);
        m = refusal("local_cpu: yes please\n");
        assertTrue(m.contains("local_cpu: expected true or false"), m);
        m = refusal("max_local_disk_size: \"lots\"\n");
        assertTrue(m.contains("max_local_disk_size: expected a size in GB"), m);
        m = refusal("remote_url: \"lm://localhost:65432\"\n");
        assertTrue(m.contains("LMCache's own cache server") && m.contains("Redis"), m);
        m = refusal("local_disk: \"file://local_disk/\"\n");
        assertTrue(m.contains("three slashes") && m.contains("write the bare path, local_disk/"), m);
    }

    @Test
    void lmcachesEnvironmentVariables() throws Exception {
        assertNull(KvCacheConfig.fromEnvironment(Map.of("PATH", "/bin", "LMCACHE_USE_EXPERIMENTAL", "True")));
        KvCacheConfig c = KvCacheConfig.fromEnvironment(Map.of(
                "LMCACHE_CHUNK_SIZE", "128",
                "LMCACHE_LOCAL_CPU", "False",
                "LMCACHE_LOCAL_DISK", "\"file:///var/cache/kv/\"",
                "LMCACHE_MAX_LOCAL_DISK_SIZE", "5.0",
                "LMCACHE_REMOTE_SERDE", "naive",
                "LMCACHE_USE_EXPERIMENTAL", "True",
                "LMCACHE_LOG_LEVEL", "INFO"));
        assertEquals(128, c.chunkSize());
        assertFalse(c.localCpu());
        assertEquals(Path.of("/var/cache/kv"), c.localDisk());
        assertEquals(5_000_000_000L, c.maxLocalDiskBytes());
        var e = assertThrows(IllegalArgumentException.class,
                () -> KvCacheConfig.fromEnvironment(Map.of("LMCACHE_USE_LAYERWISE", "True")));
        assertTrue(e.getMessage().contains("'LMCACHE_USE_LAYERWISE' is an LMCache setting"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> KvCacheConfig.fromEnvironment(Map.of("LMCACHE_IO_THREADS", "100000")));
        assertTrue(e.getMessage().contains("io_threads must be from 1 to 256"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> KvCacheConfig.fromEnvironment(Map.of("LMCACHE_CHUNK_SIZE", "big")));
        assertTrue(e.getMessage().contains("LMCACHE_CHUNK_SIZE: expected an integer"), e.getMessage());
        // LMCACHE_CONFIG_FILE wins, and LMCache then ignores the other variables
        Path f = Files.writeString(tmp.resolve("lm.yaml"), "chunk_size: 64\n");
        assertEquals(64, KvCacheConfig.fromEnvironment(Map.of("LMCACHE_CONFIG_FILE", f.toString(),
                "LMCACHE_CHUNK_SIZE", "128")).chunkSize());
    }
}
