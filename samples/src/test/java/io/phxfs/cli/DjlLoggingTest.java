package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.safetensors.Fixtures;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What DJL (and Netty) log reaches the user through the CLI's SLF4J binding: nothing but
 * warnings and errors by default, so a plain run, successful or not, prints no "SLF4J(W): No
 * SLF4J providers were found" lines; {@code -v} says more. Each run is a JVM of its own with the
 * CLI's class path, as {@code java -cp ... PhoenixCli} or the shaded jar runs it: SLF4J picks
 * its provider once per JVM, which in-process runs cannot show.
 */
class DjlLoggingTest {
    @TempDir
    Path work;

    private record Run(int exit, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private Run run(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                "io.phxfs.cli.PhoenixCli"));
        cmd.addAll(List.of(args));
        Path err = Files.createTempFile(work, "stderr", ".txt");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(180, TimeUnit.SECONDS), "did not finish: " + String.join(" ", args));
        return new Run(p.exitValue(), out, Files.readString(err));
    }

    private static void assertNoSlf4jLines(Run r) {
        assertFalse(r.err().contains("SLF4J"), () -> "SLF4J's own diagnostics on stderr: " + r);
    }

    @Test
    void djlRunPrintsNoSlf4jWarningsWhenItSucceeds() throws Exception {
        Run r = run("djl-run", Fixtures.file("tiny-llama").toString(), "--ids", "1,7,42", "--generate", "2", "--json");
        assertEquals(0, r.exit(), r::toString);
        assertNoSlf4jLines(r);
        // nothing at all on stderr but, on a noisy machine, the speed's own warning
        for (String line : r.err().lines().toList()) {
            assertTrue(line.startsWith("phoenix: djl-run: warning:"), () -> "unexpected stderr line: " + r);
        }
    }

    @Test
    void djlRunPrintsNoSlf4jWarningsWhenItFails() throws Exception {
        // DJL has started (the model is loaded) when the ids are found outside the vocabulary
        Run vocab = run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,512");
        assertEquals(2, vocab.exit(), vocab::toString);
        assertNoSlf4jLines(vocab);
        assertEquals(List.of("phoenix: error: token id 512 outside the vocabulary [0, 512)"), vocab.err().lines().toList(),
                vocab::toString);
        Run missing = run("djl-run", "/no/such/model", "--ids", "1");
        assertEquals(2, missing.exit(), missing::toString);
        assertNoSlf4jLines(missing);
        assertEquals(1, missing.err().lines().count(), missing::toString);
    }

    @Test
    void kvRedisFailurePrintsNoSlf4jWarnings() throws Exception {
        // Netty (under Lettuce) looks for SLF4J too; nothing listens on port 1
        Run r = run("kv", "bench", "--host", "--layout", "tiny-llama", "--chunks", "1", "--repeat", "1", "--quiet",
                "--dir", work.toString(), "--redis", "redis://127.0.0.1:1");
        assertNoSlf4jLines(r);
    }

    @Test
    void verboseShowsDjlsInformationalLogOnStderr() throws Exception {
        Run quiet = run("djl-run", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,7", "--repeat", "5");
        assertEquals(0, quiet.exit(), quiet::toString);
        assertFalse(quiet.err().contains("INFO "), quiet::toString);
        Run verbose = run("djl-run", "-v", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,7", "--repeat", "5");
        assertEquals(0, verbose.exit(), verbose::toString);
        assertNoSlf4jLines(verbose);
        assertTrue(verbose.err().lines().anyMatch(l -> l.startsWith("INFO ai.djl.")), verbose::toString);
        assertFalse(verbose.out().contains("INFO"), "the log stays off stdout: " + verbose);
        Run debug = run("djl-run", "-vv", Fixtures.file("tiny-gpt2").toString(), "--ids", "1,7", "--repeat", "5");
        assertEquals(0, debug.exit(), debug::toString);
        assertTrue(debug.err().lines().anyMatch(l -> l.startsWith("DEBUG ai.djl.")), debug::toString);
    }
}
