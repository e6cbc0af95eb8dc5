package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code phoenix load-bench} runs every reader on a small file and reports rates and memory. */
class LoadBenchCommandTest {
    @TempDir
    Path dir;

    @Test
    void hostAndDeviceRunsReportEveryReader() {
        Path model = dir.resolve("m");
        Cli g = Cli.run("gen-model", model.toString(), "--size", "3m", "--hidden", "256", "--intermediate", "512",
                "--vocab", "1000", "--heads", "4", "--kv-heads", "2");
        assertEquals(0, g.exit(), g.toString());
        String file = model.resolve("model.safetensors").toString();
        for (String target : new String[] {"--host", "--device=0"}) {
            Cli r = Cli.run("load-bench", file, target, "--repeat", "1", "--json", "--quiet");
            assertEquals(0, r.exit(), r.toString());
            JsonNode j = r.json();
            assertTrue(j.path("verified").asBoolean());
            for (String k : new String[] {"phoenix", "filechannel", "mmap"}) {
                assertTrue(j.path("gb_per_s").path(k).asDouble() > 0, k + ": " + r.out());
            }
            assertTrue(j.path("phoenix_vs").has("filechannel"));
            assertTrue(j.path("memory").path("vmhwm_after_first_load_bytes").asLong() > 0);
            if (new java.io.File("/usr/bin/dd").canExecute() || new java.io.File("/bin/dd").canExecute()) {
                assertTrue(j.path("gb_per_s").path("dd").asDouble() > 0, r.out());
            }
        }
        Cli text = Cli.run("load-bench", file, "--repeat", "1", "--quiet", "--no-dd");
        assertEquals(0, text.exit(), text.toString());
        assertTrue(text.out().contains("phoenix load (WeightLoader)") && text.out().contains("peak RSS (VmHWM)"), text.out());
    }

    @Test
    void notASafetensorsFileIsInvalid() {
        Cli r = Cli.run("load-bench", dir.toString());
        assertEquals(2, r.exit(), r.toString());
    }
}
