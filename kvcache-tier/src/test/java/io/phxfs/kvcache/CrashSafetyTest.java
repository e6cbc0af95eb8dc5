package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A child JVM stores 4 MiB chunks in a loop and is killed with SIGKILL at random moments, 24
 * times, with fsync policy {@code none} and the default {@code file} in turn (the latter syncs
 * each store's chunk files together before their renames). After each kill the index is
 * rebuilt from the headers, leftover temporaries are gone, every chunk the tier serves has
 * exactly the bytes that were stored, the last prompt the child reported stored is held whole,
 * and the next child's stores go on.
 */
class CrashSafetyTest {
    private static final int KILLS = 24;

    @TempDir
    Path tmp;

    @Test
    void sigkillAtRandomMomentsNeverLeavesACorruptChunkServed() throws Exception {
        Path dir = tmp.resolve("cache");
        String java = ProcessHandle.current().info().command().orElse("java");
        SplittableRandom rnd = new SplittableRandom(42);
        long next = 0;
        int tempsSeen = 0;
        long servedChecked = 0;
        for (int kill = 0; kill < KILLS; kill++) {
            DiskTier.FsyncPolicy fsync = kill % 2 == 0 ? DiskTier.FsyncPolicy.NONE : DiskTier.FsyncPolicy.FILE;
            Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
                    System.getProperty("java.class.path"), CrashChild.class.getName(), dir.toString(), String.valueOf(next),
                    fsync.name())
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
            String first = out.readLine();
            assertTrue(first != null && first.startsWith("stored "), "child " + kill + " did not store: " + first);
            assertEquals("512", first.split(" ")[2], "child " + kill + " resumed storing: " + first);
            // the child's later lines, read meanwhile (killing the child closes the stream)
            AtomicLong last = new AtomicLong(Long.parseLong(first.split(" ")[1]));
            Thread reader = Thread.ofPlatform().daemon().start(() -> {
                try {
                    for (String line; (line = out.readLine()) != null; ) {
                        last.set(Long.parseLong(line.split(" ")[1]));
                    }
                } catch (java.io.IOException closed) {
                    // the child is gone
                }
            });
            Thread.sleep(rnd.nextInt(5, 120));
            p.destroyForcibly(); // SIGKILL
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            reader.join(5000);
            next = last.get() + 1;

            try (DiskTier disk = new DiskTier(dir, 256L << 20, 0, DiskTier.FsyncPolicy.NONE)) {
                tempsSeen += disk.removedTemporaries();
                assertEquals(0, disk.stats().corrupt(), "a renamed chunk file was damaged");
                servedChecked += verifyEverything(disk);
            }
            // a store that returned (its line was printed) is held, both chunks, after the kill
            try (KvCacheEngine e = new KvCacheEngine(CrashChild.config(dir, fsync), CrashChild.LAYOUT)) {
                assertEquals(2 * CrashChild.CHUNK, e.lookup(TestData.tokens(2 * CrashChild.CHUNK, last.get())),
                        "prompt " + last.get() + " was reported stored before kill " + kill + " (fsync " + fsync
                                + ") but is not held");
            }
        }
        System.err.println("CrashSafetyTest: " + KILLS + " SIGKILLs, " + tempsSeen + " interrupted temporaries removed, "
                + servedChecked + " chunks served and verified, prompts up to " + next);
        assertTrue(servedChecked > KILLS, "too few chunks checked: " + servedChecked);
        assertTrue(tempsSeen > 0, "no kill landed inside a store: the test did not test a torn write");
    }

    /** Reads every indexed chunk; each one served must have the bytes its key's hash seeds. */
    private static long verifyEverything(DiskTier disk) {
        KvLayout l = CrashChild.LAYOUT;
        long len = l.bytesPerChunk(CrashChild.CHUNK);
        long n = 0;
        List<String> keys = disk.keys();
        try (RegisteredBuffer got = TestData.PHX.host().allocate(len);
             RegisteredBuffer want = TestData.PHX.host().allocate(len)) {
            for (String k : keys) {
                CacheKey key = CacheKey.parse(k);
                if (disk.get(key, got.segment().orElseThrow())) {
                    long seed = ByteBuffer.wrap(HexFormat.of().parseHex(key.chunkHash())).getLong();
                    TestData.fill(want.segment().orElseThrow(), seed);
                    long mismatch = got.segment().orElseThrow().mismatch(want.segment().orElseThrow());
                    assertEquals(-1, mismatch, "chunk " + k + " served with wrong bytes at " + mismatch);
                    n++;
                }
            }
        }
        return n;
    }

}
