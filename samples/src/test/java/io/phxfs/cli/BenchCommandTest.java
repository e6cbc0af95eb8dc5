package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** `phoenix bench` and `phoenix info` in-process, on small generated files. */
class BenchCommandTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"--host", "--device=0"})
    void jsonReportsEveryReaderAndTheSweep(String target) {
        Cli r = Cli.run("bench", target, "--size", "8m", "--dir", dir.toString(), "--sizes", "4k,1m", "--depths", "1,4",
                "--sweep-bytes", "2m", "--repeat", "1", "--json", "--quiet");
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        assertEquals(8L << 20, j.get("bytes").asLong());
        assertTrue(j.get("verified").asBoolean());
        for (String k : new String[] {"ceiling_gbps", "phoenix_gbps", "baseline_gbps"}) {
            assertTrue(j.get("whole_file").get(k).asDouble() > 0, k + " in " + r);
        }
        assertEquals(4, j.get("sweep").size());
        for (JsonNode p : j.get("sweep")) {
            assertTrue(p.get("iops").asLong() > 0, p.toString());
            // like with like: as many baseline threads as Phoenix has reads in flight
            assertEquals(p.get("depth").asInt(), p.get("baseline_threads").asInt(), p.toString());
            assertTrue(p.get("single_thread_gbps").asDouble() > 0, p.toString());
        }
        assertTrue(j.get("sweep_baseline").asText().contains("as many threads as the depth"), r.out());
        assertTrue(j.get("whole_file").get("ceiling").asText().contains("threads pread"), r.out());
        // 8 MiB is under the 64 MiB a rate needs: marked, and warned about even with --quiet
        assertFalse(j.get("reliable").asBoolean(), r.out());
        assertTrue(j.get("unreliable_because").asText().contains("64 MiB"), r.out());
        assertTrue(r.err().strip().lines().allMatch(l -> l.contains("too small to measure")), "--quiet: " + r.err());
    }

    @Test
    void aLargeEnoughFileIsNotMarkedUnreliable() {
        Cli r = Cli.run("bench", "--host", "--size", "64m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1", "--json",
                "--quiet");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.json().get("reliable").asBoolean(), r.out());
        assertTrue(r.err().isEmpty(), r.err());
    }

    @Test
    void withoutAnAcceleratorTheDefaultTargetIsHostMemoryAndItSaysSo() {
        boolean noAccelerator = io.phxfs.core.Phoenix.open().device(0).isHostMemory();
        Cli r = Cli.run("bench", "--size", "1m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1", "--json", "--quiet");
        assertEquals(0, r.exit(), r.toString());
        String target = r.json().get("target").asText();
        if (noAccelerator) {
            assertTrue(target.startsWith("host memory"), target);
            // said once, and only without --quiet (which silences every notice)
            assertEquals(0, r.err().lines().filter(l -> l.contains("no accelerator")).count(), r.err());
            Cli loud = Cli.run("bench", "--size", "1m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1", "--json");
            assertEquals(1, loud.err().lines().filter(l -> l.contains("no accelerator")).count(), loud.err());
        } else {
            assertTrue(target.startsWith("device 0"), target);
            assertFalse(r.err().contains("no accelerator"), r.err());
        }
        // --device 0 is still device 0 (host memory by another name where there is no accelerator)
        Cli forced = Cli.run("bench", "--device", "0", "--size", "1m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1",
                "--json", "--quiet");
        assertEquals(0, forced.exit(), forced.toString());
        assertTrue(forced.json().get("target").asText().startsWith("device 0"), forced.out());
        assertFalse(forced.err().contains("no accelerator"), forced.err());
    }

    @Test
    void tableAndProgressGoToTheirStreams() {
        Cli r = Cli.run("bench", "--size", "4m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains("ceiling") && r.out().contains("phoenix") && r.out().contains("baseline"), r.out());
        assertTrue(r.out().contains("x ceiling") && r.out().contains("1 thread:"), r.out());
        assertTrue(r.out().contains("UNRELIABLE"), r.out());
        assertTrue(r.out().contains("phoenix bench --clean --dir " + dir), r.out());
        assertTrue(r.err().contains("whole file, run 1/1"), r.err());
    }

    @Test
    void directReadsOfAFileWithAPartialLastBlock() throws Exception {
        Path f = dir.resolve("odd.bin");
        byte[] data = new byte[3 * 4096 + 17];
        new java.util.Random(5).nextBytes(data);
        java.nio.file.Files.write(f, data);
        Cli r = Cli.run("bench", "--file", f.toString(), "--direct", "--sizes", "4k", "--depths", "2", "--repeat", "1",
                "--json", "--quiet");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.json().get("verified").asBoolean());
    }

    @ParameterizedTest
    @ValueSource(strings = {"--host", "--device=0"})
    void aBenchFileChangedSinceItWasWrittenFailsVerification(String target) throws Exception {
        String[] args = {"bench", target, "--size", "1m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1",
                "--json", "--quiet"};
        Cli first = Cli.run(args);
        assertEquals(0, first.exit(), first.toString());
        assertTrue(first.json().get("verified").asBoolean(), first.toString());
        assertTrue(first.json().path("verify_error").isMissingNode(), first.toString());

        // same size, so the next run reuses it; one byte differs from what the generator wrote
        Path bench = dir.resolve("phoenix-bench-" + (1 << 20) + ".bin");
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(bench,
                java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(1);
            ch.read(b, 777_777);
            b.put(0, (byte) ~b.get(0));
            ch.write(b.rewind(), 777_777);
        }
        Cli second = Cli.run(args);
        assertEquals(1, second.exit(), second.toString());
        JsonNode j = second.json();
        assertFalse(j.get("verified").asBoolean(), second.toString());
        assertTrue(j.get("verify_error").asText().startsWith("byte 777777 "), second.toString());
        assertTrue(second.err().contains("byte 777777"), second.err());
    }

    @ParameterizedTest
    @ValueSource(strings = {"--device=7", "--depths=0", "--repeat=0", "--threads=0", "--threads=-3", "--file=/nonexistent/file"})
    void invalidInputExitsTwoWithOneLine(String bad) {
        Cli r = Cli.run("bench", bad, "--size", "1m", "--dir", dir.toString(), "--no-sweep", "--quiet");
        assertEquals(2, r.exit(), r.toString());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }

    @Test
    void anInvalidSizeIsRefusedWhileParsingNamingOptionAndValue() {
        Cli r = Cli.run("bench", "--sizes=4k,foo", "--dir", dir.toString(), "--no-sweep", "--quiet");
        assertEquals(2, r.exit(), r.toString());
        // picocli's first line, then the usage
        assertTrue(r.err().lines().findFirst().orElseThrow().startsWith("Invalid value for option '--sizes'")
                && r.err().contains("'foo'"), r.err());
    }

    @Test
    void theTableEndsWithAVerdictAndEachSweepPointSaysWhetherItIsNoisy() {
        Cli r = Cli.run("bench", "--host", "--size", "64m", "--dir", dir.toString(), "--sizes", "64k,1m", "--depths", "1",
                "--sweep-bytes", "16m", "--repeat", "3", "--quiet");
        assertEquals(0, r.exit(), r.toString());
        String verdict = r.out().lines().filter(l -> l.startsWith("verdict: ")).findFirst().orElse("");
        assertTrue(verdict.matches("verdict: phoenix (is|reads at|reaches) .*"), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("sweep: phoenix ") || l.startsWith("sweep: every point")), r.out());
        Cli j = Cli.run("bench", "--host", "--size", "64m", "--dir", dir.toString(), "--sizes", "64k", "--depths", "1",
                "--sweep-bytes", "16m", "--repeat", "1", "--json", "--quiet");
        JsonNode json = j.json();
        assertTrue(json.get("verdict").asText().contains("fewer than 3 runs"), j.out());
        assertTrue(json.get("sweep").get(0).has("noisy") && json.get("sweep").get(0).get("spread").asDouble() >= 0, j.out());
        assertTrue(json.get("whole_file").has("noisy"), j.out());
    }

    @Test
    void verdictsSayWhatToConclude() {
        double[] steady = {1.0, 1.0, 1.0};
        assertTrue(BenchCommand.verdict(1.05, 1.0, steady, steady, true, null).startsWith("phoenix reads at the CPU-copy ceiling"));
        assertTrue(BenchCommand.verdict(1.9, 1.0, steady, steady, true, null).contains("not a hard limit"));
        assertTrue(BenchCommand.verdict(0.5, 1.0, steady, steady, true, null).startsWith("phoenix reaches only 0.50x"));
        assertTrue(BenchCommand.verdict(1.0, 1.0, new double[] {0.5, 1.0, 1.5}, steady, true, null).contains("100% apart"));
        assertTrue(BenchCommand.verdict(1.0, 1.0, steady, steady, false, null).startsWith("none: the file is too small"));
        var points = java.util.List.of(new BenchCommand.Point(4096, 1, 0.4, 1, 1.0, 1, 0.05),
                new BenchCommand.Point(1 << 20, 1, 0.95, 1, 1.0, 1, 0.05), new BenchCommand.Point(8 << 20, 1, 0.2, 1, 1.0, 1, 0.9));
        String v = BenchCommand.sweepVerdict(points);
        assertTrue(v.startsWith("phoenix keeps up (>= 0.90x) from 1 MiB requests; below that (worst 0.40x)"), v);
        assertTrue(v.endsWith("1 of 3 points are noisy (marked) and left out"), v);
    }

    @Test
    void aMissingFileIsNamedWithTheOsReasonAndQuietSilencesTheHostNotice() {
        Cli r = Cli.run("bench", "--file", dir.resolve("missing").toString(), "--dir", dir.toString(), "--no-sweep", "--quiet");
        assertEquals(2, r.exit(), r.toString());
        assertEquals("phoenix: error: --file " + dir.resolve("missing") + ": ENOENT (No such file or directory)", r.err().strip());
        Cli q = Cli.run("bench", "--size", "1m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1", "--quiet");
        assertEquals(0, q.exit(), q.toString());
        assertFalse(q.err().contains("no accelerator"), "--quiet: " + q.err());
    }

    @Test
    void aUsageErrorIsTwoLinesNotTheWholeUsage() {
        Cli r = Cli.run("bench", "--size", "12q");
        assertEquals(2, r.exit(), r.toString());
        assertEquals(2, r.err().lines().count(), r.err());
        assertEquals("Try 'phoenix bench --help' for the options.", r.err().lines().toList().get(1));
    }

    @Test
    void infoNamesTheModeAndWhy() {
        Cli r = Cli.run("info");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains("device 0:") && r.out().contains("mode "), r.out());
        assertTrue(r.out().contains("not faster because") || r.out().contains("mode p2p"), r.out());
        assertEquals(io.phxfs.core.Phoenix.open().device(0).isHostMemory(), r.out().contains("no accelerator"), r.out());
        // this process's huge pages (the amount moves as the JVM runs: HeapPagesTest checks the
        // wording, check-launcher.sh the launcher's flag)
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("transparent huge pages: ")), r.out());
    }
}
