package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Chunk hashes, key strings, layouts, gather and scatter, configuration files. */
class KeysAndLayoutTest {
    @TempDir
    Path tmp;

    @Test
    void chainedHashesAreSha256OfThePreviousHashTheTokensAndTheExtraKeys() throws Exception {
        int[] tokens = TestData.tokens(600, 1);
        byte[] extra = {1, 2, 3};
        byte[][] h = new ChunkHasher(256, extra).hashes(tokens, 3);
        byte[] prev = new byte[32];
        for (int i = 0; i < 3; i++) {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(prev);
            int n = Math.min(256, 600 - i * 256);
            ByteBuffer b = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int t = 0; t < n; t++) {
                b.putInt(tokens[i * 256 + t]);
            }
            sha.update(b.array());
            sha.update(extra);
            prev = sha.digest();
            assertArrayEquals(prev, h[i], "chunk " + i);
        }
        // a fixed vector, computed apart with Python: hashlib.sha256(bytes(32) + b"".join(struct.pack("<i", i) for i in range(256)))
        int[] seq = new int[256];
        for (int i = 0; i < 256; i++) {
            seq[i] = i;
        }
        assertEquals("8c0f08d32eb37b95",
                ChunkHasher.hex(new ChunkHasher(256, null).hashes(seq, 1)[0]).substring(0, 16));
        assertNotEquals(ChunkHasher.hex(h[0]), ChunkHasher.hex(new ChunkHasher(256, null).hashes(tokens, 1)[0]));
        assertEquals(2, new ChunkHasher(256, null).chunks(600, false));
        assertEquals(3, new ChunkHasher(256, null).chunks(600, true));
    }

    @Test
    void cacheKeyHasLmcachesStringForm() {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("lora", "a1");
        CacheKey k = new CacheKey("meta-llama/Llama-3.1-8B", 2, 1, "ab12", "bfloat16", tags);
        assertEquals("meta-llama/Llama-3.1-8B@2@1@ab12@bfloat16@lora%a1", k.toString());
        assertEquals(k, CacheKey.parse(k.toString()));
        assertEquals("m@1@0@ff@half", new CacheKey("m", 1, 0, "ff", "half", null).toString());
        assertThrows(IllegalArgumentException.class, () -> new CacheKey("a@b", 1, 0, "ff", "half", null));
        assertThrows(IllegalArgumentException.class, () -> new CacheKey("m", 1, 1, "ff", "half", null));
        assertThrows(IllegalArgumentException.class, () -> CacheKey.parse("m@1@0@ff"));
    }

    @Test
    void layoutSizes() {
        KvLayout l = KvLayout.preset("llama-3.1-8b");
        assertEquals(32L << 20, l.bytesPerChunk(256));
        assertEquals(131072, l.bytesPerToken());
        KvLayout mla = new KvLayout(61, 1, 576, KvLayout.DType.BFLOAT16, KvLayout.Kind.MLA);
        assertEquals(61L * 576 * 2, mla.bytesPerToken());
        assertThrows(IllegalArgumentException.class, () -> KvLayout.preset("gpt-9"));
    }

    /** Gathered bytes land where [2, L, T, H*D] says, for KV_2LTD and MLA, batch row 1 of 2; scatter undoes it. */
    @Test
    void gatherAndScatterFollowTheChunkLayout() {
        for (KvLayout.Kind kind : KvLayout.Kind.values()) {
            KvLayout l = new KvLayout(3, 2, 4, KvLayout.DType.FLOAT32, kind);
            int batch = 2;
            int seq = 10;
            int elems = batch * 2 * seq * 4;
            int tensors = kind.tensorsPerLayer();
            RegisteredBuffer[][] t = new RegisteredBuffer[tensors][3];
            for (int kv = 0; kv < tensors; kv++) {
                for (int layer = 0; layer < 3; layer++) {
                    t[kv][layer] = TestData.PHX.host().allocate(elems * 4L);
                    MemorySegment s = t[kv][layer].segment().orElseThrow();
                    for (int i = 0; i < elems; i++) {
                        s.setAtIndex(ValueLayout.JAVA_FLOAT, i, kv * 10000 + layer * 1000 + i);
                    }
                }
            }
            KvTensors kvt = kind == KvLayout.Kind.MLA ? KvTensors.mla(l, List.of(t[0]), batch, 1, seq)
                    : KvTensors.of(l, List.of(t[0]), List.of(t[1]), batch, 1, seq);
            int start = 3;
            int n = 5;
            try (RegisteredBuffer chunk = TestData.PHX.host().allocate(l.bytesPerChunk(n))) {
                MemorySegment c = chunk.segment().orElseThrow();
                kvt.copyOut(start, n, c);
                for (int kv = 0; kv < tensors; kv++) {
                    for (int layer = 0; layer < 3; layer++) {
                        for (int tok = 0; tok < n; tok++) {
                            for (int h = 0; h < 2; h++) {
                                for (int dd = 0; dd < 4; dd++) {
                                    long at = (((long) kv * 3 + layer) * n + tok) * 8 + h * 4 + dd;
                                    int src = ((1 * 2 + h) * seq + start + tok) * 4 + dd;
                                    assertEquals(kv * 10000 + layer * 1000 + src, c.getAtIndex(ValueLayout.JAVA_FLOAT, at));
                                }
                            }
                        }
                    }
                }
                // scatter into zeroed tensors: exactly those elements come back, the rest stays 0
                for (RegisteredBuffer[] row : t) {
                    for (RegisteredBuffer b : row) {
                        b.segment().orElseThrow().fill((byte) 0);
                    }
                }
                kvt.copyIn(c, start, n);
                MemorySegment s = t[tensors - 1][2].segment().orElseThrow();
                int src = ((2 + 1) * seq + start + 2) * 4 + 3;
                assertEquals((tensors - 1) * 10000 + 2000 + src, s.getAtIndex(ValueLayout.JAVA_FLOAT, src));
                assertEquals(0f, s.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
            }
            for (RegisteredBuffer[] row : t) {
                for (RegisteredBuffer b : row) {
                    b.close();
                }
            }
        }
    }

    @Test
    void configFromYamlAndJson() throws Exception {
        Path y = Files.writeString(tmp.resolve("lmcache.yaml"), """
                chunk_size: 128
                local_cpu: true
                max_local_cpu_size: 0.5
                local_disk: "file:///tmp/kv-cache-dir"
                max_local_disk_size: 20
                remote_url: "redis://localhost:6379"
                local_disk_fsync: full
                """);
        KvCacheConfig c = KvCacheConfig.load(y);
        assertEquals(128, c.chunkSize());
        assertEquals(500_000_000L, c.maxLocalCpuBytes());
        assertEquals(Path.of("/tmp/kv-cache-dir"), c.localDisk());
        assertEquals(20_000_000_000L, c.maxLocalDiskBytes());
        assertEquals("redis://localhost:6379", c.remoteUrl());
        assertEquals(DiskTier.FsyncPolicy.FULL, c.fsync());
        Path j = Files.writeString(tmp.resolve("c.json"), "{\"chunk_size\": 64, \"local_cpu\": false}");
        assertEquals(64, KvCacheConfig.load(j).chunkSize());

        Path bad = Files.writeString(tmp.resolve("bad.yaml"), "chunk_sise: 64\n");
        var e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(bad));
        assertEquals(true, e.getMessage().contains("bad.yaml") && e.getMessage().contains("chunk_sise"), e.getMessage());
        Path bad2 = Files.writeString(tmp.resolve("bad2.yaml"), "chunk_size: many\n");
        e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(bad2));
        assertEquals(true, e.getMessage().contains("chunk_size"), e.getMessage());
        Path bad3 = Files.writeString(tmp.resolve("bad3.yaml"), "remote_url: \"s3://bucket\"\n");
        assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(bad3));
    }

    @Test
    void badSettingsFilesNameTheFileTheKeyAndTheReason() throws Exception {
        for (String[] c : new String[][] {
                {"local_disk: \"file://relative/dir\"\n", "local_disk: 'file://relative/dir' is neither", "three slashes"},
                {"local_disk: \"file:relative\"\n", "local_disk: 'file:relative' is neither", "hierarchical"},
                {"local_disk: \"file:///tmp/kv x\"\n", "local_disk: 'file:///tmp/kv x' is neither", "Illegal character"},
                {"local_disk: \"\"\n", "local_disk: empty", "for no disk tier"}}) {
            Path f = Files.writeString(tmp.resolve("kv.yaml"), c[0]);
            var e = assertThrows(IllegalArgumentException.class, () -> KvCacheConfig.load(f), c[0]);
            assertTrue(e.getMessage().startsWith(f + ": " + c[1]) && e.getMessage().contains(c[2]), e.getMessage());
        }
        // file:///abs, a plain path and a relative one (to the working directory, as LMCache's)
        assertEquals(Path.of("/tmp/kv x"), KvCacheConfig.load(Files.writeString(tmp.resolve("a.yaml"),
                "local_disk: \"file:///tmp/kv%20x\"\n")).localDisk());
        assertEquals(Path.of("rel/dir"), KvCacheConfig.load(Files.writeString(tmp.resolve("b.yaml"),
                "local_disk: rel/dir\n")).localDisk());

        Path missing = tmp.resolve("missing.yaml");
        var e = assertThrows(java.io.UncheckedIOException.class, () -> KvCacheConfig.load(missing));
        assertEquals(missing + ": cannot read the KV-cache settings: no such file", e.getMessage());
        e = assertThrows(java.io.UncheckedIOException.class, () -> KvCacheConfig.load(tmp));
        assertEquals(tmp + ": cannot read the KV-cache settings: a directory, not a settings file", e.getMessage());
    }

    @Test
    void aMemoryTierPastTheMachinesMemoryIsRefusedNamingTheSetting() throws Exception {
        // 1e30 GB (rounded to Long.MAX_VALUE bytes) and twice the machine: refused before any allocation
        for (String size : new String[] {"1e30", Double.toString(2.0 * MemoryTier.machineBytes() / 1e9)}) {
            KvCacheConfig c = KvCacheConfig.load(Files.writeString(tmp.resolve("big.yaml"), "max_local_cpu_size: " + size + "\n"));
            var e = assertThrows(IllegalArgumentException.class, () -> new KvCacheEngine(c, KvLayout.preset("tiny-llama")));
            assertTrue(e.getMessage().startsWith("max_local_cpu_size ") && e.getMessage().contains("more than this machine's memory"),
                    e.getMessage());
        }
    }

    @Test
    void aLargeWriteQueueBoundAllocatesNothingUpFront() {
        // an array of the bound was allocated at the start: OutOfMemoryError; the queue's
        // contents are bounded by the memory tier's slots (each queued chunk is pinned in one)
        KvCacheConfig c = KvCacheConfig.builder().maxLocalCpuBytes(8L << 20).localDisk(tmp.resolve("q"))
                .maxLocalDiskBytes(64L << 20).diskMinFreeBytes(0).writeQueueChunks(Integer.MAX_VALUE).model("q").build();
        KvLayout l = KvLayout.preset("tiny-llama");
        int[] p = TestData.tokens(8 * 256, 9);
        long len = l.bytesPerChunk(p.length);
        try (KvCacheEngine e = new KvCacheEngine(c, l);
             RegisteredBuffer src = TestData.PHX.host().allocate(len);
             RegisteredBuffer dst = TestData.PHX.host().allocate(len)) {
            TestData.fill(src.segment().orElseThrow(), 9);
            assertEquals(p.length, e.store(p, new ChunkedKv(src, l, 256)));
            e.flush();
            assertEquals(p.length, e.retrieve(p, new ChunkedKv(dst, l, 256)));
            assertEquals(-1, dst.segment().orElseThrow().mismatch(src.segment().orElseThrow()));
            assertEquals(8, e.metrics().tier("disk").entries());
        } catch (InterruptedException ex) {
            throw new AssertionError(ex);
        }
    }
}
