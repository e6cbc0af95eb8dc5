package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cache directory removed (or renamed away) while the tier runs, as an operator clearing
 * the cache by hand would: before, every later store failed until a restart. Now the next
 * store makes the directory again (0700, its lock taken again), the chunks that went with the
 * old one are misses, and stores and hits go on.
 */
class DirectoryRemovedTest {
    private static final KvLayout L = CrashChild.LAYOUT;
    private static final int CHUNK = 256;

    @TempDir
    Path tmp;

    private static int store(KvCacheEngine e, RegisteredBuffer buf, long prompt) {
        int[] tokens = TestData.tokens(2 * CHUNK, prompt);
        for (int c = 0; c < 2; c++) {
            TestData.fill(buf.segment().orElseThrow().asSlice(c * L.bytesPerChunk(CHUNK), L.bytesPerChunk(CHUNK)),
                    TestData.seedOf(tokens, c, CHUNK));
        }
        return e.store(tokens, new ChunkedKv(buf, L, CHUNK));
    }

    private static boolean retrievedExactly(KvCacheEngine e, RegisteredBuffer got, RegisteredBuffer want, long prompt) {
        int[] tokens = TestData.tokens(2 * CHUNK, prompt);
        got.segment().orElseThrow().fill((byte) 0);
        if (e.retrieve(tokens, new ChunkedKv(got, L, CHUNK)) != 2 * CHUNK) {
            return false;
        }
        for (int c = 0; c < 2; c++) {
            TestData.fill(want.segment().orElseThrow().asSlice(c * L.bytesPerChunk(CHUNK), L.bytesPerChunk(CHUNK)),
                    TestData.seedOf(tokens, c, CHUNK));
        }
        return got.segment().orElseThrow().mismatch(want.segment().orElseThrow()) == -1;
    }

    private static void deleteTree(Path p) throws Exception {
        try (var s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(q);
            }
        }
    }

    @Test
    void removedOrRenamedWhileRunningTheDirectoryIsMadeAgain() throws Exception {
        Path dir = tmp.resolve("cache");
        long len = L.bytesPerChunk(2 * CHUNK);
        for (boolean memoryTier : new boolean[] {false, true}) {
            KvCacheConfig c = KvCacheConfig.builder().localCpu(memoryTier).maxLocalCpuBytes(len).localDisk(dir)
                    .maxLocalDiskBytes(256L << 20).diskMinFreeBytes(0).model("removed").ioThreads(2).build();
            try (KvCacheEngine e = new KvCacheEngine(c, L);
                 RegisteredBuffer buf = TestData.PHX.host().allocate(len);
                 RegisteredBuffer want = TestData.PHX.host().allocate(len)) {
                assertEquals(2 * CHUNK, store(e, buf, 0));
                e.flush();
                deleteTree(dir); // rm -rf while serving
                assertEquals(2 * CHUNK, store(e, buf, 1));
                e.flush();
                assertTrue(Files.isDirectory(dir), "made again");
                assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
                assertEquals(2, e.metrics().tier("disk").entries(), "the old chunks left the index: "
                        + e.metrics().tier("disk"));
                assertTrue(retrievedExactly(e, buf, want, 1), "memory tier " + memoryTier);
                var refused = assertThrows(UncheckedIOException.class,
                        () -> new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE));
                assertTrue(refused.getMessage().contains("in use"), refused.getMessage());

                Path away = tmp.resolve("away-" + memoryTier);
                Files.move(dir, away); // mv while serving
                assertEquals(2 * CHUNK, store(e, buf, 2));
                e.flush();
                assertTrue(retrievedExactly(e, buf, want, 2));
                assertEquals(0, e.metrics().tier("disk").failedPuts(), e.metrics().tier("disk").toString());
                deleteTree(away);
            }
            deleteTree(dir);
        }
    }
}
