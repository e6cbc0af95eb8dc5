package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.safetensors.Fixtures;
import java.io.File;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** {@code phoenix djl-run}: the logits transformers computed, greedy tokens, the JSON contract, bad input. */
class DjlRunCommandTest {
    @Test
    void jsonHasTheReferenceLogitsTopTokensAndGeneratedIds() throws Exception {
        JsonNode ref = new ObjectMapper().readTree(Fixtures.file("tiny-llama/expected_logits.json").toFile());
        Cli r = Cli.run("djl-run", Fixtures.file("tiny-llama").toString(), "--ids", "1,7,42,300,5,99,511,0",
                "--generate", "8", "--top", "3", "--json");
        assertEquals(0, r.exit(), r::toString);
        JsonNode j = r.json();
        assertEquals(ref.get("input_ids").get(0), j.get("ids"));
        assertEquals(8, j.get("logits").size());
        double max = 0;
        for (int i = 0; i < 8; i++) {
            assertEquals(512, j.get("logits").get(i).size());
            for (int v = 0; v < 512; v++) {
                max = Math.max(max, Math.abs(j.get("logits").get(i).get(v).asDouble()
                        - ref.get("logits").get(i).get(v).asDouble()));
            }
        }
        assertTrue(max <= 1e-3, "max abs error " + max);
        assertEquals(ref.get("generate_8_greedy"), j.get("generated"));
        assertEquals(3, j.get("top").size());
        assertEquals(ref.get("generate_8_greedy").get(0).asLong(), j.get("top").get(0).get(0).asLong(),
                "the first generated token is the top next token");
        assertTrue(j.get("load_seconds").asDouble() > 0);
        assertTrue(j.get("tokens_per_s").asDouble() > 0);
    }

    @Test
    void humanOutputNamesTheModelAndTheTopTokens() {
        Cli r = Cli.run("djl-run", Fixtures.file("tiny-gpt2-sharded").toString(), "--ids", "1,7,42");
        assertEquals(0, r.exit(), r::toString);
        assertTrue(r.out().contains("gpt2, 2 layers, vocab 512"), r::toString);
        assertTrue(r.out().contains("tokens/s"), r::toString);
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("speed") && l.contains("median of")), r::toString);
        assertEquals(5 + 4, r.out().strip().split("\n").length, r::toString);
    }

    @Test
    void badInputIsExitTwoWithOneLine() {
        Cli missing = Cli.run("djl-run", "/no/such/model", "--ids", "1");
        assertEquals(2, missing.exit(), missing::toString);
        assertTrue(missing.err().contains("/no/such/model"), missing::toString);
        Cli vocab = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,512");
        assertEquals(2, vocab.exit(), vocab::toString);
        assertTrue(vocab.err().contains("token id 512 outside the vocabulary"), vocab::toString);
        Cli noConfig = Cli.run("djl-run", Fixtures.dir().toString() + File.separator + "tiny-gpt2" + File.separator
                + "..", "--ids", "1");
        assertEquals(2, noConfig.exit(), noConfig::toString);
        assertTrue(noConfig.err().contains("config.json"), noConfig::toString);
        Cli notNumber = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,x");
        assertEquals(2, notNumber.exit(), notNumber::toString);
        Cli noRepeat = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1", "--repeat", "-1");
        assertEquals(2, noRepeat.exit(), noRepeat::toString);
        assertTrue(noRepeat.err().contains("--repeat"), noRepeat::toString);
    }

    /**
     * A GPU asked of the CPU build of libtorch (CI's): one line saying so, before any tensor is
     * made on it (libtorch printed a C++ stack, then failed inside the first tensor).
     */
    @Test
    void aDeviceTheEngineCannotComputeOnIsExitTwoWithOneLine() {
        org.junit.jupiter.api.Assumptions.assumeFalse(ai.djl.engine.Engine.getEngine("PyTorch")
                .hasCapability(ai.djl.engine.StandardCapabilities.CUDA), "a CUDA libtorch computes on the GPU");
        Cli r = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1", "--device", "0");
        assertEquals(2, r.exit(), r::toString);
        assertTrue(r.err().contains("gpu(0): this PyTorch engine") && r.err().contains("cannot compute on a GPU here"), r::toString);
        assertEquals(1, r.err().lines().filter(l -> !l.isBlank()).count(), r::toString);
    }

    /** The usage's synopsis: the lines from "Usage:" to the description. */
    private static String synopsis(String usage) {
        String s = usage.substring(usage.indexOf("Usage:"));
        return s.substring(0, s.indexOf("Runs a Hugging Face checkpoint"));
    }

    @Test
    void usageNamesIdsOnceAndEveryOption() {
        Cli r = Cli.run("djl-run", "--help");
        assertEquals(0, r.exit(), r::toString);
        String synopsis = synopsis(r.out());
        assertEquals(1, synopsis.split("--ids", -1).length - 1, () -> "--ids more than once in the synopsis:\n" + synopsis);
        assertTrue(synopsis.contains("--ids=ID[,ID...]"), synopsis);
        assertFalse(synopsis.contains("...]["), synopsis); // picocli's "ID[,ID...][,ID[,ID...]...]"
        assertTrue(synopsis.strip().endsWith("MODEL_DIR"), synopsis);
        // a hand-written synopsis must not fall behind the options
        java.util.regex.Matcher cluster = java.util.regex.Pattern.compile("\\[-([A-Za-z]+)]").matcher(synopsis);
        assertTrue(cluster.find(), synopsis);
        String letters = cluster.group(1);
        for (OptionSpec o : new CommandLine(new DjlRunCommand()).getCommandSpec().options()) {
            String shortest = o.shortestName();
            boolean there = shortest.length() == 2 ? letters.contains(shortest.substring(1))
                    : synopsis.contains(o.longestName());
            assertTrue(there, () -> o.longestName() + " missing from the synopsis:\n" + synopsis);
        }
        // the option list names --ids once too
        List<String> idsRows = r.out().substring(r.out().indexOf(synopsis) + synopsis.length()).lines().filter(l -> l.strip().startsWith("--ids=")).toList();
        assertEquals(1, idsRows.size(), r::toString);
        assertTrue(idsRows.get(0).strip().startsWith("--ids=ID[,ID...] "), r::toString);
    }

    @Test
    void speedIsTheMedianOfTimedRunsAndSaysHowReliableItIs() {
        Cli r = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,7,42", "--json");
        assertEquals(0, r.exit(), r::toString);
        JsonNode j = r.json();
        assertTrue(j.get("reliable").isBoolean(), r::toString);
        int runs = j.get("timed_runs").asInt();
        double seconds = j.get("timed_seconds").asDouble();
        // by default: at least 5 runs and 1 s of them (a tiny model's forward pass takes milliseconds)
        assertTrue(runs >= 5 && seconds >= 1.0, r::toString);
        double median = j.get("tokens_per_s").asDouble();
        assertTrue(j.get("tokens_per_s_min").asDouble() <= j.get("tokens_per_s_p25").asDouble()
                && j.get("tokens_per_s_p25").asDouble() <= median
                && median <= j.get("tokens_per_s_p75").asDouble()
                && j.get("tokens_per_s_p75").asDouble() <= j.get("tokens_per_s_max").asDouble(), r::toString);
        assertTrue(j.get("tokens_per_s_spread").asDouble() >= 0, r::toString);
        boolean warned = r.err().contains("phoenix: djl-run: warning:");
        assertEquals(!j.get("reliable").asBoolean(), warned, r::toString);
        assertEquals(!j.get("reliable").asBoolean(), j.has("unreliable_because"), r::toString);
    }

    @Test
    void oneShortRunIsFlaggedUnreliable() {
        Cli r = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,7,42", "--repeat", "1", "--json");
        assertEquals(0, r.exit(), r::toString);
        JsonNode j = r.json();
        assertFalse(j.get("reliable").asBoolean(), r::toString);
        assertEquals(1, j.get("timed_runs").asInt(), r::toString);
        assertTrue(j.get("unreliable_because").asText().contains("1 timed run"), r::toString);
        assertTrue(j.get("tokens_per_s").asDouble() > 0, r::toString);
        List<String> err = r.err().lines().toList();
        assertEquals(1, err.size(), r::toString);
        assertTrue(err.get(0).startsWith("phoenix: djl-run: warning: tokens/s is unreliable"), r::toString);

        Cli text = Cli.run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,7,42", "--generate", "2",
                "--repeat", "1");
        assertEquals(0, text.exit(), text::toString);
        String speed = text.out().lines().filter(l -> l.startsWith("speed")).findFirst().orElseThrow();
        assertTrue(speed.contains("UNRELIABLE"), text::toString);
        assertTrue(text.err().contains("unreliable"), text::toString);
    }
}
