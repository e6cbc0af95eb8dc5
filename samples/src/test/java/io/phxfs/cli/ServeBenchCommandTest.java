package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * serve-bench as a user runs it: real {@code phoenix serve} child JVMs on a fixture checkpoint,
 * each tier's greedy outputs compared with the tier off's on the same prompts.
 */
class ServeBenchCommandTest {
    private static Path fixture(String name) {
        for (String key : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String v = System.getProperty(key);
            if (v != null && !v.isBlank() && !v.startsWith("${") && Files.isDirectory(Path.of(v, name))) {
                return Path.of(v, name).toAbsolutePath();
            }
        }
        throw new IllegalStateException("fixture " + name + " not found (-Dphx.fixtures)");
    }

    @Test
    void everyTierReusesThePrefixAndGivesTheTierOffsText(@TempDir Path dir) {
        Cli r = Cli.run("serve-bench", fixture("tiny-chat-llama").toString(), "--requests", "3", "--concurrency", "1,3",
                "--prefix-tokens", "600", "--suffix-tokens", "8", "--max-tokens", "6", "--tiers", "off,memory,disk",
                "--dir", dir.resolve("kv").toString(), "--json", "--quiet");
        assertEquals(0, r.exit(), r::toString);
        JsonNode root = r.json();
        Map<String, Integer> seen = new HashMap<>();
        for (JsonNode run : root.path("runs")) {
            String tier = run.path("tier").asText();
            seen.merge(tier, 1, Integer::sum);
            assertEquals(3 * 6, run.path("completion_tokens").asInt(), run::toString);
            assertTrue(run.path("ttft_first_s").asDouble() > 0, run::toString);
            assertEquals(3 * 608, run.path("prompt_tokens").asInt(), run::toString);
            if (tier.equals("off")) {
                assertEquals(0, run.path("cached_tokens").asInt(), run::toString);
            } else {
                // the prefix's whole chunks (256 tokens each) of every request came from the tier
                assertTrue(run.path("cached_tokens").asInt() >= 3 * 512, run::toString);
                assertEquals(3, run.path("outputs_equal_to_off").asInt(), run::toString);
            }
        }
        assertEquals(Map.of("off", 2, "memory", 2, "disk", 2), seen, r::toString);
        assertTrue(root.path("throughput_vs_one_client").has("memory_c3"), r::toString);
    }
}
