package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code phoenix kv bench} and {@code phoenix kv stats}, in-process. */
class KvCommandTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = PhoenixCli.run(new PrintWriter(out), new PrintWriter(err), args);
        return new Run(rc, out.toString(), err.toString());
    }

    @Test
    void benchJsonHasExactlyTheIssuesFieldsAndProgressGoesToStderr() throws Exception {
        Run r = run("kv", "bench", "--layout", "tiny-llama", "--chunks", "8", "--repeat", "1", "--host", "--json",
                "--dir", dir.toString());
        assertEquals(0, r.exit(), r.err());
        JsonNode j = new ObjectMapper().readTree(r.out());
        TreeSet<String> names = new TreeSet<>();
        j.fieldNames().forEachRemaining(names::add);
        assertEquals(new TreeSet<>(List.of("layout", "chunks", "bytes", "store_gb_per_s", "retrieve_gb_per_s",
                "raw_write_gb_per_s", "raw_read_gb_per_s", "lookup_us_128k")), names);
        assertEquals("tiny-llama", j.get("layout").asText());
        assertEquals(8 * 65536, j.get("bytes").asLong());
        assertTrue(j.get("store_gb_per_s").asDouble() > 0 && j.get("lookup_us_128k").asDouble() > 0);
        assertTrue(r.err().contains("run 1/1"), r.err());
        try (var left = Files.list(dir)) {
            assertEquals(0, left.count(), "the bench removes its files");
        }
    }

    @Test
    void statsReportsWhatADirectoryHoldsAndChangesNothing() throws Exception {
        Path cache = dir.resolve("cache");
        io.phxfs.examples.KvCache.main(new String[] {cache.toString()});
        Files.writeString(cache.resolve("0000000000000000000000000000000000000000.kv"), "junk");
        Run r = run("kv", "stats", cache.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode j = new ObjectMapper().readTree(r.out());
        assertEquals(2, j.get("chunks").asInt());
        assertEquals(1, j.get("corrupt").asInt());
        assertTrue(j.get("held_by").isNull(), "no process holds a closed tier's directory: " + j);
        assertEquals(2, j.get("models").get("model (bfloat16, world 1)").asInt());
        assertTrue(Files.exists(cache.resolve("0000000000000000000000000000000000000000.kv")), "stats deletes nothing");
        Run text = run("kv", "stats", cache.toString());
        assertTrue(text.out().contains("2 chunks") && text.out().contains("1 damaged"), text.out());
    }

    @Test
    void benchCreatesItsDirKeepsChunksForStatsOnAskingAndPrintsSizesInMiB() throws Exception {
        // a missing --dir is made; without --keep it goes again at the end (and its made parents)
        Path gone = dir.resolve("x/y");
        Run plain = run("kv", "bench", "--layout", "tiny-llama", "--chunks", "3", "--repeat", "1", "--host", "--dir",
                gone.toString());
        assertEquals(0, plain.exit(), plain.err());
        assertFalse(Files.exists(dir.resolve("x")), "the directories kv bench made are still there");
        Path missing = dir.resolve("a/b");
        Run r = run("kv", "bench", "--layout", "tiny-llama", "--chunks", "3", "--repeat", "2", "--host", "--dir",
                missing.toString(), "--keep");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("3 chunks, 192.00 KiB"), r.out());
        List<Path> work;
        try (var s = Files.list(missing)) {
            work = s.toList();
        }
        assertEquals(1, work.size(), work.toString());
        Path tier = work.get(0).resolve("tier");
        assertTrue(r.err().contains("phoenix kv stats " + tier), r.err());
        // the last run's chunks, not the warm-up's, and nothing but the tier
        try (var s = Files.list(work.get(0))) {
            assertEquals(List.of(tier), s.toList());
        }
        Run stats = run("kv", "stats", tier.toString(), "--json");
        assertEquals(3, new ObjectMapper().readTree(stats.out()).get("chunks").asInt(), stats.out());
        // pointed at the bench's folder, stats says where the chunks are instead of a bare 0
        Run up = run("kv", "stats", work.get(0).toString());
        assertTrue(up.out().contains("0 chunks, 0 B") && up.out().contains("phoenix kv stats " + tier), up.out());
        // llama-3.1-8b's 32 MiB chunks print in MiB, not as 32768 KiB
        Run big = run("kv", "bench", "--chunks", "1", "--repeat", "1", "--host", "--dir", dir.toString(), "--json");
        assertEquals(0, big.exit(), big.err());
        assertTrue(big.err().contains("1 chunks of 32.00 MiB"), big.err());
        assertTrue(big.out().startsWith("{\n") || big.out().startsWith("{\r\n") || big.out().startsWith("{ "),
                "pretty-printed as load and bench print JSON: " + big.out());
    }

    @Test
    void kvHelpListsWholeSentences() {
        Run r = run("kv", "--help");
        String bench = r.out().lines().dropWhile(l -> !l.strip().startsWith("bench")).takeWhile(l -> !l.strip().startsWith("stats"))
                .map(String::strip).reduce("", (a, b) -> a + " " + b).strip();
        assertTrue(bench.endsWith("."), "kv --help cuts the bench description off: " + bench);
    }

    @Test
    void badInputIsExitTwoWithOneLine() {
        Run r = run("kv", "stats", dir.resolve("missing").toString());
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("no such directory"), r.err());
        r = run("kv", "bench", "--layout", "gpt-9", "--host");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("unknown layout 'gpt-9'"), r.err());
        r = run("kv", "bench", "--chunks", "0", "--host");
        assertEquals(2, r.exit());
    }
}
