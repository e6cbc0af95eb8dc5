package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One cache directory, two tiers. Before the directory lock, a second process opening the
 * directory deleted the first one's stores under way as "leftover temporaries" (the first
 * process's store then failed), and both kept the byte cap each for itself. Now the second
 * writer is refused with a message naming the holder, a reader ({@code phoenix kv stats}) is
 * told who holds it, and a SIGKILLed holder leaves no stale hold.
 */
class SharedDirectoryTest {
    @TempDir
    Path tmp;

    @Test
    void aSecondTierInThisProcessIsRefusedUntilTheFirstCloses() {
        Path dir = tmp.resolve("cache");
        try (DiskTier first = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            var e = assertThrows(UncheckedIOException.class, () -> new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE));
            assertTrue(e.getMessage().startsWith("local_disk " + dir + ": in use by another disk tier of this process"),
                    e.getMessage());
            // an engine over it is refused the same way, and leaves nothing open behind
            var e2 = assertThrows(UncheckedIOException.class, () -> new KvCacheEngine(CrashChild.config(dir,
                    DiskTier.FsyncPolicy.NONE), CrashChild.LAYOUT));
            assertTrue(e2.getMessage().contains("in use by another disk tier"), e2.getMessage());
            try (DiskTier ro = DiskTier.openReadOnly(dir)) {
                assertNotNull(ro.heldBy());
                assertTrue(ro.heldBy().startsWith("pid " + ProcessHandle.current().pid() + " on "), ro.heldBy());
            }
        }
        try (DiskTier again = new DiskTier(dir, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            assertEquals(0, again.stats().corrupt());
        }
        try (DiskTier ro = DiskTier.openReadOnly(dir)) {
            assertNull(ro.heldBy(), "closed tiers hold nothing");
        }
    }

    @Test
    void anotherProcessStoringThereIsNamedAndItsStoresUnderWayAreLeftAlone() throws Exception {
        Path dir = tmp.resolve("cache");
        String java = ProcessHandle.current().info().command().orElse("java");
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
                System.getProperty("java.class.path"), CrashChild.class.getName(), dir.toString(), "0", "FILE")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        List<String> lines = new CopyOnWriteArrayList<>();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
            String first = out.readLine();
            assertTrue(first != null && first.startsWith("stored "), "the child did not store: " + first);
            lines.add(first);
            Thread reader = Thread.ofPlatform().daemon().start(() -> {
                try {
                    for (String line; (line = out.readLine()) != null; ) {
                        lines.add(line);
                    }
                } catch (java.io.IOException closed) {
                    // the child is gone
                }
            });
            // open the directory over and over while the child stores: each refused, naming it
            for (int i = 0; i < 20; i++) {
                var e = assertThrows(UncheckedIOException.class,
                        () -> new DiskTier(dir, 256L << 20, 0, DiskTier.FsyncPolicy.NONE));
                assertTrue(e.getMessage().contains("in use by another process (pid " + p.pid() + " on "), e.getMessage());
                assertTrue(e.getMessage().contains("its own local_disk"), e.getMessage());
                try (DiskTier ro = DiskTier.openReadOnly(dir)) {
                    assertNotNull(ro.heldBy());
                    assertTrue(ro.heldBy().startsWith("pid " + p.pid() + " "), ro.heldBy());
                    // files the child evicts between the listing and their reading are gone, not damaged
                    assertEquals(0, ro.stats().corrupt(), "read while the child stores and evicts: " + ro.stats());
                }
                Thread.sleep(50);
            }
            int before = lines.size();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (lines.size() < before + 3 && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            p.destroyForcibly(); // SIGKILL: the kernel drops the hold
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            reader.join(5000);
        } finally {
            p.destroyForcibly();
        }
        for (String line : lines) {
            assertEquals("512", line.split(" ")[2], "a store of the child failed while this process opened its directory: "
                    + line);
        }
        try (DiskTier d = new DiskTier(dir, 256L << 20, 0, DiskTier.FsyncPolicy.NONE)) {
            assertEquals(0, d.stats().corrupt());
            assertTrue(d.stats().entries() >= 2, d.stats() + " after " + lines.size() + " stores");
        }
    }
}
