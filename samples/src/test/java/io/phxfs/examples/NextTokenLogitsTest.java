package io.phxfs.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.phxfs.safetensors.Fixtures;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The README's DJL example on tiny-llama: transformers' first greedy token (testdata/fixtures/tiny-llama/expected_logits.json). */
class NextTokenLogitsTest {
    @Test
    void printsTheTokenTransformersGenerates() throws Exception {
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            NextTokenLogits.main(new String[] {Fixtures.file("tiny-llama").toString(), "1", "7", "42", "300", "5", "99",
                    "511", "0"});
        } finally {
            System.setOut(saved);
        }
        assertEquals("next token 485", out.toString(StandardCharsets.UTF_8).split(" \\(")[0]);
    }
}
