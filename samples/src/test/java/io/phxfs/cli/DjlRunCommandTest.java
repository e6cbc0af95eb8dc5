package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.safetensors.Fixtures;
import java.io.File;
import org.junit.jupiter.api.Test;

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
    }
}
