package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Chunk files: header, restart, damaged, torn and foreign files, the byte cap. */
class DiskTierTest {
    private static final KvLayout L = KvLayout.preset("tiny-llama");
    private static final long LEN = L.bytesPerChunk(256);

    @TempDir
    Path dir;

    private static CacheKey key(int i) {
        return new CacheKey("m", 1, 0, "%064x".formatted(i), "bfloat16", Map.of());
    }

    private static void put(DiskTier d, int i) {
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN)) {
            TestData.fill(b.segment().orElseThrow(), i);
            assertTrue(d.put(key(i), L, 256, b.segment().orElseThrow()));
        }
    }

    private static boolean getAndCheck(DiskTier d, int i) {
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN); RegisteredBuffer w = TestData.PHX.host().allocate(LEN)) {
            if (!d.get(key(i), b.segment().orElseThrow())) {
                return false;
            }
            TestData.fill(w.segment().orElseThrow(), i);
            assertEquals(-1, b.segment().orElseThrow().mismatch(w.segment().orElseThrow()), "chunk " + i);
            return true;
        }
    }

    private Path fileOf(int i) {
        return dir.resolve(DiskIndex.fileName(key(i).toString()));
    }

    @Test
    void fileHasA4KiBHeaderAndAnAlignedPayloadAndSurvivesARestart() throws Exception {
        try (DiskTier d = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.FULL)) {
            put(d, 1);
            put(d, 2);
        }
        assertEquals(4096 + LEN, Files.size(fileOf(1)));
        byte[] head = new byte[8];
        try (RandomAccessFile f = new RandomAccessFile(fileOf(1).toFile(), "r")) {
            f.readFully(head);
        }
        assertEquals("PHXKVC", new String(head, 0, 6));
        try (DiskTier d = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.FILE)) {
            assertEquals(2, d.stats().entries());
            assertTrue(d.contains(key(1)));
            assertTrue(getAndCheck(d, 1));
            assertTrue(getAndCheck(d, 2));
        }
    }

    @Test
    void putAllWritesEachChunkAsItsOwnFileAndAnswersPerChunk() throws Exception {
        int n = DiskTier.GROUP + 6; // two groups
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN * n);
             DiskTier d = new DiskTier(dir, 1L << 34, 0, DiskTier.FsyncPolicy.FULL)) {
            put(d, 0); // already held: true, left as it is
            java.util.List<KvTier.Put> puts = new java.util.ArrayList<>();
            for (int i = 0; i < n; i++) {
                TestData.fill(b.segment().orElseThrow().asSlice(i * LEN, LEN), i);
                puts.add(new KvTier.Put(key(i), 256, b.segment().orElseThrow().asSlice(i * LEN, LEN)));
            }
            // a payload of the wrong length is declined without failing its neighbours
            puts.set(3, new KvTier.Put(key(3), 256, b.segment().orElseThrow().asSlice(3 * LEN, LEN - 4096)));
            boolean[] ok = d.putAll(L, puts);
            for (int i = 0; i < n; i++) {
                assertEquals(i != 3, ok[i], "chunk " + i);
            }
            assertEquals(n - 1, d.stats().entries());
            assertEquals(n - 2, d.stats().puts() - 1);
            assertEquals(1, d.stats().failedPuts());
            assertFalse(Files.exists(fileOf(3)));
        }
        try (var files = Files.list(dir)) {
            assertEquals(n - 1, files.filter(f -> !f.getFileName().toString().equals(DirectoryLock.NAME)).count(),
                    "one file per chunk stored (and the tier's lock file), no temporaries left");
        }
        try (DiskTier d = new DiskTier(dir, 1L << 34, 0, DiskTier.FsyncPolicy.FILE)) {
            assertEquals(n - 1, d.stats().entries());
            assertEquals(0, d.removedTemporaries());
            for (int i = 0; i < n; i++) {
                assertEquals(i != 3, getAndCheck(d, i), "chunk " + i + " after a restart");
            }
        }
    }

    @Test
    void getAllReadsManyChunksInAWindowAndAnswersPerChunk() throws Exception {
        int n = 12;
        try (DiskTier d = new DiskTier(dir, 1L << 34, 0, DiskTier.FsyncPolicy.NONE);
             RegisteredBuffer b = TestData.PHX.host().allocate(LEN * (n + 1));
             RegisteredBuffer w = TestData.PHX.host().allocate(LEN)) {
            for (int i = 0; i < n; i++) {
                put(d, i);
            }
            try (RandomAccessFile f = new RandomAccessFile(fileOf(4).toFile(), "rw")) { // damaged payload
                f.seek(4096 + LEN - 1);
                int x = f.read();
                f.seek(4096 + LEN - 1);
                f.write(x ^ 1);
            }
            Files.delete(fileOf(7)); // gone behind the tier's back
            var seg = b.segment().orElseThrow();
            seg.fill((byte) 0x77);
            java.util.List<KvTier.Get> gets = new java.util.ArrayList<>();
            for (int i = 0; i < n; i++) {
                gets.add(new KvTier.Get(key(i), seg.asSlice(i * LEN, i == 9 ? LEN - 4096 : LEN)));
            }
            gets.add(new KvTier.Get(key(20), seg.asSlice(n * LEN, LEN))); // never stored
            // batches of two chunks (by bytes) or three (by count), two in flight: the window
            // refills as batches are verified
            boolean[] ok = d.getAll(gets, 2 * LEN, 3, 2);
            for (int i = 0; i <= n; i++) {
                boolean want = i < n && i != 4 && i != 7 && i != 9;
                assertEquals(want, ok[i], "chunk " + (i < n ? i : 20));
                if (want) {
                    TestData.fill(w.segment().orElseThrow(), i);
                    assertEquals(-1, seg.asSlice(i * LEN, LEN).mismatch(w.segment().orElseThrow()), "chunk " + i);
                }
            }
            TierStats st = d.stats();
            assertEquals(n - 3, st.hits(), st.toString());
            assertEquals(4, st.misses(), st.toString());
            assertEquals(1, st.corrupt(), st.toString());
            assertFalse(Files.exists(fileOf(4)), "a damaged file is deleted");
            assertFalse(d.contains(key(4)));
            assertFalse(d.contains(key(7)), "a vanished file leaves the index");
            assertTrue(d.contains(key(9)), "a wrong-length destination is a miss, the chunk stays");
            assertEquals(n - 2, st.entries(), st.toString());
            // the same through the default sizes, all in one batch
            boolean[] again = d.getAll(gets.subList(0, 5));
            assertTrue(again[0] && again[1] && again[2] && again[3] && !again[4]);
        }
    }

    @Test
    void damagedPayloadIsAMissDeletedAndCounted() throws Exception {
        try (DiskTier d = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            put(d, 1);
            try (RandomAccessFile f = new RandomAccessFile(fileOf(1).toFile(), "rw")) {
                f.seek(4096 + 1000);
                int b = f.read();
                f.seek(4096 + 1000);
                f.write(b ^ 0x40);
            }
            assertFalse(getAndCheck(d, 1));
            assertEquals(1, d.stats().corrupt());
            assertFalse(Files.exists(fileOf(1)));
            assertFalse(d.contains(key(1)));
        }
    }

    @Test
    void tornDamagedForeignAndTemporaryFilesAreDroppedAtStart() throws Exception {
        try (DiskTier d = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            for (int i = 1; i <= 5; i++) {
                put(d, i);
            }
        }
        // torn: cut short
        try (RandomAccessFile f = new RandomAccessFile(fileOf(1).toFile(), "rw")) {
            f.setLength(4096 + LEN / 2);
        }
        // damaged header
        try (RandomAccessFile f = new RandomAccessFile(fileOf(2).toFile(), "rw")) {
            f.seek(60);
            f.write('#');
        }
        // foreign: chunk 3's file under chunk 4's name
        Files.copy(fileOf(3), fileOf(4), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        // not a chunk at all, under a chunk's name
        Files.writeString(dir.resolve("0123456789012345678901234567890123456789.kv"), "hello");
        // an interrupted store
        Files.write(dir.resolve(fileOf(5).getFileName() + ".tmp-1-1"), new byte[100]);
        // somebody else's file: left alone
        Files.writeString(dir.resolve("README"), "mine");
        try (DiskTier d = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            assertEquals(4, d.stats().corrupt(), d.stats().toString());
            assertEquals(1, d.removedTemporaries());
            assertEquals(2, d.stats().entries(), d.keys().toString());
            assertTrue(getAndCheck(d, 3));
            assertTrue(getAndCheck(d, 5));
            for (int i : new int[] {1, 2, 4}) {
                assertFalse(getAndCheck(d, i), "chunk " + i);
                assertFalse(Files.exists(fileOf(i)));
            }
            assertTrue(Files.exists(dir.resolve("README")));
        }
    }

    @Test
    void byteCapEvictsTheLeastRecentlyUsed() {
        long file = 4096 + LEN;
        try (DiskTier d = new DiskTier(dir, 3 * file, 0, DiskTier.FsyncPolicy.NONE)) {
            put(d, 1);
            put(d, 2);
            put(d, 3);
            assertTrue(getAndCheck(d, 1)); // 2 is now the least recently used
            put(d, 4);
            assertEquals(3, d.stats().entries());
            assertEquals(1, d.stats().evictions());
            assertFalse(d.contains(key(2)));
            assertFalse(Files.exists(fileOf(2)));
            assertTrue(getAndCheck(d, 1));
            assertTrue(getAndCheck(d, 4));
            assertTrue(d.stats().bytesUsed() <= 3 * file);
        }
    }

}
