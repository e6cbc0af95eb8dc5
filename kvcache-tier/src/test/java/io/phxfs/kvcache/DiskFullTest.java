package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file system that fills up: a 24 MiB tmpfs the test mounts (as root; CI runs as root). Where
 * mounting is not allowed the test falls back to the tier's own quota on an ordinary directory
 * (a cap smaller than the data) and says so on stderr: then ENOSPC itself is not exercised.
 */
class DiskFullTest {
    private static final KvLayout L = CrashChild.LAYOUT; // 4 MiB chunks
    private static final int CHUNK = 256;
    private static final long FS = 24L << 20;

    @TempDir
    Path tmp;
    private Path mnt;
    private boolean mounted;

    @BeforeEach
    void mount() throws Exception {
        mnt = Files.createDirectories(tmp.resolve("small"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + FS, "tmpfs", mnt.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        mounted = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        if (!mounted) {
            System.err.println("DiskFullTest: cannot mount a tmpfs (" + out.strip() + "): falling back to the tier's "
                    + "self-enforced quota; ENOSPC is not exercised here");
        }
    }

    @AfterEach
    void unmount() throws Exception {
        if (mounted) {
            new ProcessBuilder("umount", mnt.toString()).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    private KvCacheEngine engine(long minFree) {
        // mounted: a cap far above the file system, so that the file system says when it is full
        long cap = mounted ? 1L << 30 : FS;
        return new KvCacheEngine(KvCacheConfig.builder().localCpu(false).localDisk(mnt.resolve("cache"))
                .maxLocalDiskBytes(cap).diskMinFreeBytes(minFree).model("full").build(), L);
    }

    private static int[] prompt(int i) {
        return TestData.tokens(CHUNK, 1000 + i);
    }

    private static void fill(RegisteredBuffer b, int[] tokens) {
        TestData.fill(b.segment().orElseThrow(), TestData.seedOf(tokens, 0, CHUNK));
    }

    /** Retrieves prompt i; when served, its bytes must be the stored ones. */
    private static boolean retrieveVerified(KvCacheEngine e, int i, RegisteredBuffer got, RegisteredBuffer want) {
        int n = e.retrieve(prompt(i), new ChunkedKv(got, L, CHUNK));
        if (n == 0) {
            return false;
        }
        assertEquals(CHUNK, n);
        fill(want, prompt(i));
        assertEquals(-1, got.segment().orElseThrow().mismatch(want.segment().orElseThrow()), "prompt " + i);
        return true;
    }

    @Test
    void storesEvictOrFailCleanlyAndReadsKeepWorking() throws IOException {
        long len = L.bytesPerChunk(CHUNK);
        for (long minFree : new long[] {0, 6L << 20}) {
            try (KvCacheEngine e = engine(minFree);
                 RegisteredBuffer src = TestData.PHX.host().allocate(len);
                 RegisteredBuffer got = TestData.PHX.host().allocate(len);
                 RegisteredBuffer want = TestData.PHX.host().allocate(len)) {
                int stored = 0;
                for (int i = 0; i < 12; i++) { // 48 MiB into 24 MiB
                    fill(src, prompt(i));
                    stored += e.store(prompt(i), new ChunkedKv(src, L, CHUNK)) == CHUNK ? 1 : 0;
                    assertTrue(retrieveVerified(e, i, got, want), "the newest chunk is readable");
                }
                int served = 0;
                for (int i = 0; i < 12; i++) {
                    served += retrieveVerified(e, i, got, want) ? 1 : 0;
                }
                TierStats s = e.metrics().tier("disk");
                System.err.println("DiskFullTest (min free " + minFree + "): " + stored + " of 12 stored, " + served
                        + " still served, " + s);
                assertTrue(served >= 3 && served < 12, "some chunks were evicted, the newest are served: " + served);
                assertTrue(s.evictions() > 0);
                assertEquals(0, s.corrupt());
                assertTrue(stored >= served);
                try (var files = Files.list(mnt.resolve("cache"))) {
                    assertEquals(0, files.filter(f -> f.toString().contains(".tmp-")).count(), "no temporary left behind");
                }
            }
            // the next round starts from an empty directory
            try (var files = Files.list(mnt.resolve("cache"))) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
        }
    }

    @Test
    void aFileSystemFilledByOthersFailsStoresCleanlyAndKeepsServing() throws Exception {
        Assumptions.assumeTrue(mounted, "the ballast case needs a file system of known size (a tmpfs the test mounts)");
        long len = L.bytesPerChunk(CHUNK);
        try (KvCacheEngine a = engine(0);
             KvCacheEngine b = new KvCacheEngine(KvCacheConfig.builder().localCpu(false).localDisk(mnt.resolve("other"))
                     .maxLocalDiskBytes(1L << 30).diskMinFreeBytes(0).model("full").build(), L);
             RegisteredBuffer src = TestData.PHX.host().allocate(len);
             RegisteredBuffer got = TestData.PHX.host().allocate(len);
             RegisteredBuffer want = TestData.PHX.host().allocate(len)) {
            fill(src, prompt(0));
            assertEquals(CHUNK, a.store(prompt(0), new ChunkedKv(src, L, CHUNK)));
            // someone else's file takes the rest of the file system
            Path ballast = mnt.resolve("ballast");
            try (var out = Files.newOutputStream(ballast)) {
                byte[] mb = new byte[1 << 20];
                while (true) {
                    out.write(mb);
                }
            } catch (IOException full) {
                // the file system is full
            }
            // a tier with nothing of its own to evict: the store fails cleanly
            fill(src, prompt(1));
            int n = b.store(prompt(1), new ChunkedKv(src, L, CHUNK));
            TierStats s = b.metrics().tier("disk");
            System.err.println("DiskFullTest (ballast): store returned " + n + ", " + s);
            assertEquals(0, n);
            assertTrue(s.failedPuts() > 0 && s.errors() > 0, s.toString());
            try (var files = Files.list(mnt.resolve("other"))) {
                assertEquals(0, files.filter(f -> !f.getFileName().toString().equals(DirectoryLock.NAME)).count(),
                        "nothing left behind but the tier's lock file");
            }
            // reads keep working
            assertTrue(retrieveVerified(a, 0, got, want));
            Files.delete(ballast);
            fill(src, prompt(1));
            assertEquals(CHUNK, b.store(prompt(1), new ChunkedKv(src, L, CHUNK)));
            assertTrue(retrieveVerified(b, 1, got, want));
            assertEquals(0, a.metrics().tier("disk").corrupt() + b.metrics().tier("disk").corrupt());
        }
    }
}
