package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        assertEquals(2, j.get("models").get("model (bfloat16, world 1)").asInt());
        assertTrue(Files.exists(cache.resolve("0000000000000000000000000000000000000000.kv")), "stats deletes nothing");
        Run text = run("kv", "stats", cache.toString());
        assertTrue(text.out().contains("2 chunks") && text.out().contains("1 damaged"), text.out());
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
