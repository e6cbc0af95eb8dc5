package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code phoenix load-bench} runs every reader on a small file and reports rates and memory. */
class LoadBenchCommandTest {
    @TempDir
    Path dir;

    @Test
    void hostAndDeviceRunsReportEveryReaderComparedLikeWithLike() {
        Path model = dir.resolve("m");
        Cli g = Cli.run("gen-model", model.toString(), "--size", "3m", "--hidden", "256", "--intermediate", "512",
                "--vocab", "1000", "--heads", "4", "--kv-heads", "2");
        assertEquals(0, g.exit(), g.toString());
        String file = model.resolve("model.safetensors").toString();
        boolean dd = new java.io.File("/usr/bin/dd").canExecute() || new java.io.File("/bin/dd").canExecute();
        for (String target : new String[] {"--host", "--device=0"}) {
            Cli r = Cli.run("load-bench", file, target, "--repeat", "1", "--json", "--quiet");
            assertEquals(0, r.exit(), r.toString());
            JsonNode j = r.json();
            assertTrue(j.path("verified").asBoolean());
            for (String k : new String[] {"phoenix", "filechannel", "mmap"}) {
                assertTrue(j.path("gb_per_s").path(k).asDouble() > 0, k + ": " + r.out());
                assertFalse(j.path("measures").path(k).asText().isEmpty(), k + ": " + r.out());
            }
            if (target.equals("--host") && j.path("phoenix_mapped").asBoolean()) {
                // a mapping against a mapping; the loader's copy against the copies
                assertEquals(List.of("mmap_touch"), names(j.path("phoenix_vs")), r.out());
                assertTrue(j.path("gb_per_s").path("mmap_touch").asDouble() > 0, r.out());
                assertTrue(j.path("phoenix_copy_vs").has("filechannel") && j.path("phoenix_copy_vs").has("mmap"), r.out());
                assertFalse(j.path("phoenix_copy_vs").has("mmap_touch"), r.out());
            } else {
                assertTrue(j.path("phoenix_vs").has("filechannel") && !j.path("phoenix_vs").has("mmap_touch"), r.out());
                assertTrue(j.path("phoenix_copy_vs").isMissingNode(), r.out());
            }
            assertTrue(j.path("memory").path("vmhwm_after_first_load_bytes").asLong() > 0);
            if (dd) {
                assertTrue(j.path("gb_per_s").path("dd").asDouble() > 0, r.out());
                assertTrue(j.path("measures").path("dd").asText().contains("no destination"), r.out());
            }
        }
        Cli text = Cli.run("load-bench", file, "--repeat", "1", "--quiet", "--no-dd");
        assertEquals(0, text.exit(), text.toString());
        assertTrue(text.out().contains("copies (every byte moved") && text.out().contains("peak RSS (VmHWM)"), text.out());
    }

    @Test
    void defaultsToTheTargetLoadDefaultsToAlignsItsTableAndExplainsItsMemory() {
        Path model = dir.resolve("d");
        assertEquals(0, Cli.run("gen-model", model.toString(), "--size", "3m", "--hidden", "256", "--intermediate", "512",
                "--vocab", "1000", "--heads", "4", "--kv-heads", "2").exit());
        Cli load = Cli.run("load", model.toString(), "--json");
        Cli bench = Cli.run("load-bench", model.toString(), "--repeat", "1", "--json", "--quiet", "--no-dd");
        assertEquals(0, bench.exit(), bench.toString());
        boolean loadOnHost = load.json().path("mode").asText().equals("host");
        assertEquals(loadOnHost, bench.json().path("target").asText().startsWith("host"), load.out() + bench.out());
        assertTrue(bench.json().path("memory").has("rss_anon_growth_during_load_bytes"), bench.out());
        assertTrue(bench.json().path("memory").has("rss_file_growth_during_load_bytes"), bench.out());
        Cli text = Cli.run("load-bench", model.toString(), "--host", "--repeat", "1", "--quiet", "--no-dd");
        // every rate in one column, whatever the label's length
        List<Integer> columns = text.out().lines().filter(l -> l.contains(" GB/s")).map(l -> l.indexOf(" GB/s")).distinct().toList();
        assertEquals(1, columns.size(), text.out());
        assertTrue(text.out().contains("of file pages mapped (the page cache, shared: no extra memory)"), text.out());
    }

    @Test
    void acceptsWhatLoadAccepts() {
        Path model = dir.resolve("sharded");
        Cli g = Cli.run("gen-model", model.toString(), "--size", "4m", "--hidden", "256", "--intermediate", "512",
                "--vocab", "1000", "--heads", "4", "--kv-heads", "2", "--shards", "2");
        assertEquals(0, g.exit(), g.toString());
        for (Path p : new Path[] {model, model.resolve("model.safetensors.index.json")}) {
            Cli load = Cli.run("load", p.toString(), "--host", "--json");
            assertEquals(0, load.exit(), load.toString());
            Cli r = Cli.run("load-bench", p.toString(), "--repeat", "1", "--json", "--quiet", "--no-dd");
            assertEquals(0, r.exit(), r.toString());
            assertEquals(2, r.json().path("files").asInt(), r.out());
            assertTrue(r.json().path("verified").asBoolean(), r.out());
        }
    }

    @Test
    void notAModelIsInvalid() {
        Cli r = Cli.run("load-bench", dir.toString());
        assertEquals(2, r.exit(), r.toString());
    }

    private static List<String> names(JsonNode o) {
        List<String> l = new java.util.ArrayList<>();
        o.fieldNames().forEachRemaining(l::add);
        return l;
    }
}
