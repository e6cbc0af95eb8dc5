package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chunk file replaced, while the tier runs or between runs, by something that is no chunk
 * file: a directory, a FIFO, a symlink to a chunk file outside the directory, a file this user
 * may not read. Each is a miss that leaves the index and gives its bytes back (the tier's size
 * heals without a restart); nothing blocks on the FIFO, nothing is read through the symlink.
 */
class ForeignEntriesTest {
    private static final KvLayout L = KvLayout.preset("tiny-llama");
    private static final long LEN = L.bytesPerChunk(256);
    private static final long FILE = ChunkFileHeader.SIZE + LEN;

    @TempDir
    Path tmp;

    private static CacheKey key(int i) {
        return new CacheKey("m", 1, 0, "%064x".formatted(i), "bfloat16", Map.of());
    }

    private static void put(DiskTier d, int i) {
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN)) {
            TestData.fill(b.segment().orElseThrow(), i);
            assertTrue(d.put(key(i), L, 256, b.segment().orElseThrow()));
        }
    }

    private static boolean get(DiskTier d, int i) {
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN)) {
            return d.get(key(i), b.segment().orElseThrow());
        }
    }

    private static boolean getAll(DiskTier d, int i) {
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN)) {
            return d.getAll(List.of(new KvTier.Get(key(i), b.segment().orElseThrow())))[0];
        }
    }

    private static void mkfifo(Path p) throws Exception {
        Process pr = new ProcessBuilder("mkfifo", p.toString()).redirectErrorStream(true).start();
        assertEquals(0, pr.waitFor(), new String(pr.getInputStream().readAllBytes()));
    }

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** Replaces chunk i's file by a directory, chunk i+1's by a FIFO, chunk i+2's by a symlink out. */
    private static void replace(Path dir, Path outside, int i) throws Exception {
        Path f0 = dir.resolve(DiskIndex.fileName(key(i).toString()));
        Files.delete(f0);
        Files.createDirectory(f0);
        Files.writeString(f0.resolve("keep"), "a user's file");
        Path f1 = dir.resolve(DiskIndex.fileName(key(i + 1).toString()));
        Files.delete(f1);
        mkfifo(f1);
        // an intact chunk file, moved out of the directory and linked back: its checksum holds,
        // so only not following the link keeps the tier from reading outside its directory
        Path f2 = dir.resolve(DiskIndex.fileName(key(i + 2).toString()));
        Path out = outside.resolve("moved-" + i + ".kv");
        Files.move(f2, out);
        Files.createSymbolicLink(f2, out);
    }

    @Test
    void replacedWhileRunningEachIsAMissAndTheSizeHeals() throws Exception {
        Path dir = tmp.resolve("cache");
        Path outside = Files.createDirectory(tmp.resolve("outside"));
        try (DiskTier d = new DiskTier(dir, 1L << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            for (int i = 0; i < 8; i++) {
                put(d, i);
            }
            assertEquals(8 * FILE, d.stats().bytesUsed());
            replace(dir, outside, 0); // chunks 0, 1, 2 through get
            replace(dir, outside, 3); // chunks 3, 4, 5 through getAll
            assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
                for (int i = 0; i < 3; i++) {
                    assertFalse(get(d, i), "get of chunk " + i);
                    assertFalse(getAll(d, i + 3), "getAll of chunk " + (i + 3));
                }
            }, "a read blocked (on the FIFO?)");
            for (int i = 0; i < 6; i++) {
                assertFalse(d.contains(key(i)), "chunk " + i + " still indexed");
            }
            assertEquals(2, d.stats().entries());
            assertEquals(2 * FILE, d.stats().bytesUsed(), "the replaced chunks' bytes are given back");
            assertTrue(get(d, 6) && get(d, 7));
            // the link's target and the user's directory are left alone; the link and the FIFO are gone
            assertTrue(Files.isRegularFile(outside.resolve("moved-0.kv")));
            assertTrue(Files.isRegularFile(dir.resolve(DiskIndex.fileName(key(0).toString())).resolve("keep")));
            assertFalse(Files.exists(dir.resolve(DiskIndex.fileName(key(2).toString())), LinkOption.NOFOLLOW_LINKS));
            assertFalse(Files.exists(dir.resolve(DiskIndex.fileName(key(1).toString())), LinkOption.NOFOLLOW_LINKS));
            // a store of the key whose name now holds a link or a FIFO writes a chunk file again
            put(d, 1);
            put(d, 2);
            assertTrue(get(d, 1) && get(d, 2));
            assertTrue(Files.isRegularFile(dir.resolve(DiskIndex.fileName(key(2).toString())), LinkOption.NOFOLLOW_LINKS));
            // the key whose name holds a user's directory: the store fails, counted, the directory stays
            long failed = d.stats().failedPuts();
            try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN)) {
                TestData.fill(b.segment().orElseThrow(), 0);
                assertFalse(d.put(key(0), L, 256, b.segment().orElseThrow()));
            }
            assertEquals(failed + 1, d.stats().failedPuts());
            assertFalse(d.contains(key(0)));
            assertTrue(Files.isRegularFile(dir.resolve(DiskIndex.fileName(key(0).toString())).resolve("keep")));
            assertEquals(4 * FILE, d.stats().bytesUsed(), "chunks 1, 2, 6, 7; no reservation left behind");
        }
    }

    @Test
    void foundAtOpenTheyAreNotIndexedAndOpeningDoesNotBlock() throws Exception {
        Path dir = tmp.resolve("cache");
        Path outside = Files.createDirectory(tmp.resolve("outside"));
        try (DiskTier d = new DiskTier(dir, 1L << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            for (int i = 0; i < 4; i++) {
                put(d, i);
            }
        }
        replace(dir, outside, 0);
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
            try (DiskTier ro = DiskTier.openReadOnly(dir)) {
                assertEquals(1, ro.stats().entries(), "kv stats counts only the chunk file left");
                assertEquals(FILE, ro.stats().bytesUsed());
            }
            try (DiskTier d = new DiskTier(dir, 1L << 30, 0, DiskTier.FsyncPolicy.NONE)) {
                assertEquals(1, d.stats().entries());
                assertEquals(FILE, d.stats().bytesUsed());
                assertFalse(d.contains(key(2)), "a symlink out of the directory is indexed");
                assertTrue(get(d, 3));
            }
        }, "opening blocked (on the FIFO?)");
        assertTrue(Files.isRegularFile(outside.resolve("moved-0.kv")));
    }

    @Test
    void aChunkFileThisUserMayNotReadLeavesTheIndex() throws Exception {
        Assumptions.assumeFalse(isRoot(), "root reads a file of mode 000");
        Path dir = tmp.resolve("cache");
        try (DiskTier d = new DiskTier(dir, 1L << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            put(d, 0);
            put(d, 1);
            Files.setPosixFilePermissions(dir.resolve(DiskIndex.fileName(key(0).toString())),
                    PosixFilePermissions.fromString("---------"));
            assertFalse(get(d, 0));
            assertFalse(d.contains(key(0)));
            assertEquals(FILE, d.stats().bytesUsed());
            put(d, 0); // stored again over it
            assertTrue(get(d, 0));
        }
    }
}
