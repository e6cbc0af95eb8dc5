package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk tier's directory made read-only while the engine runs (an operator's chmod or
 * chattr), then writable again: stores to the disk fail, counted, never an exception; the
 * chunks already on disk keep being served; once writable again stores work without a restart.
 */
class ReadOnlyDiskTest {
    private static final KvLayout L = KvLayout.preset("tiny-llama");
    private static final int CHUNK = 256;

    @TempDir
    Path tmp;
    private Path dir;
    private boolean immutable;

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static void run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, String.join(" ", cmd) + ": " + out.strip());
    }

    /**
     * No creates, renames or deletes in the directory: {@code chattr +i} for root (whom modes do
     * not stop; a remount read-only is refused while the tier's lock file is open for writing),
     * mode 0500 for anyone else.
     */
    private void readOnly(boolean on) throws Exception {
        if (isRoot()) {
            run("chattr", on ? "+i" : "-i", dir.toString());
            immutable = on;
        } else {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString(on ? "r-x------" : "rwx------"));
        }
    }

    @AfterEach
    void writable() throws Exception {
        if (immutable) {
            readOnly(false);
        }
    }

    private boolean canChattr() throws Exception {
        Path probe = Files.createDirectory(tmp.resolve("probe"));
        Process p = new ProcessBuilder("chattr", "+i", probe.toString()).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        boolean ok = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        if (ok) {
            run("chattr", "-i", probe.toString());
        }
        return ok;
    }

    private static int[] prompt(int i) {
        return TestData.tokens(2 * CHUNK, 500 + i);
    }

    private static void fill(RegisteredBuffer b, int[] tokens) {
        long len = L.bytesPerChunk(CHUNK);
        for (int c = 0; c < tokens.length / CHUNK; c++) {
            TestData.fill(b.segment().orElseThrow().asSlice(c * len, len), TestData.seedOf(tokens, c, CHUNK));
        }
    }

    /** Tokens of prompt i served, each byte checked against what was stored. */
    private static int retrieve(KvCacheEngine e, int i, RegisteredBuffer got, RegisteredBuffer want) {
        int n = e.retrieve(prompt(i), new ChunkedKv(got, L, CHUNK));
        fill(want, prompt(i));
        long bytes = L.bytesPerChunk(n);
        assertEquals(-1, got.segment().orElseThrow().asSlice(0, bytes).mismatch(want.segment().orElseThrow().asSlice(0, bytes)),
                "prompt " + i);
        return n;
    }

    @Test
    void remountedReadOnlyStoresFailCountedReadsGoOnAndWritableAgainStoresWork() throws Exception {
        dir = tmp.resolve("cache");
        long len = L.bytesPerChunk(2 * CHUNK);
        KvCacheConfig c = KvCacheConfig.builder().localCpu(false).localDisk(dir)
                .maxLocalDiskBytes(1L << 30).diskMinFreeBytes(0).model("ro").build();
        try (KvCacheEngine e = new KvCacheEngine(c, L);
             RegisteredBuffer src = TestData.PHX.host().allocate(len);
             RegisteredBuffer got = TestData.PHX.host().allocate(len);
             RegisteredBuffer want = TestData.PHX.host().allocate(len)) {
            for (int i = 0; i < 3; i++) {
                fill(src, prompt(i));
                assertEquals(2 * CHUNK, e.store(prompt(i), new ChunkedKv(src, L, CHUNK)));
            }
            if (isRoot()) {
                Assumptions.assumeTrue(canChattr(), "chattr +i is refused on this file system");
            }
            readOnly(true);
            long failedBefore = e.metrics().tier("disk").failedPuts();
            for (int i = 3; i < 6; i++) {
                fill(src, prompt(i));
                assertEquals(0, e.store(prompt(i), new ChunkedKv(src, L, CHUNK)), "a store to a read-only disk");
            }
            assertTrue(e.metrics().tier("disk").failedPuts() > failedBefore);
            for (int i = 0; i < 3; i++) {
                assertEquals(2 * CHUNK, retrieve(e, i, got, want), "stored before: still served read-only");
            }
            assertEquals(0, e.lookup(prompt(4)));
            assertEquals(3 * 2, e.metrics().tier("disk").entries());

            readOnly(false);
            for (int i = 3; i < 6; i++) {
                fill(src, prompt(i));
                assertEquals(2 * CHUNK, e.store(prompt(i), new ChunkedKv(src, L, CHUNK)), "writable again");
            }
            for (int i = 0; i < 6; i++) {
                assertEquals(2 * CHUNK, retrieve(e, i, got, want));
            }
        }
        // and a restart over it finds all of them
        try (KvCacheEngine e = new KvCacheEngine(c, L)) {
            assertEquals(6 * 2, e.metrics().tier("disk").entries());
        }
    }
}
