package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.safetensors.Fixtures;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nothing the CLI creates for itself outlives it: every command runs in a JVM of its own whose
 * java.io.tmpdir (and TMPDIR) is a private, empty directory, which must be empty again when
 * the command has ended, whether it succeeded, failed or was interrupted. (In-process runs
 * cannot show this: the JDK reads java.io.tmpdir once, at start-up.)
 */
class CleanupTest {
    @TempDir
    Path tmp;

    @TempDir
    Path work;

    private record Run(int exit, String out, String err) {}

    private ProcessBuilder cli(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Djava.io.tmpdir=" + tmp, "-cp", System.getProperty("java.class.path"),
                "io.phxfs.cli.PhoenixCli"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("TMPDIR", tmp.toString());
        return pb;
    }

    private Run run(String... args) throws Exception {
        Path err = work.resolve("stderr");
        Process p = cli(args).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "did not finish: " + String.join(" ", args));
        return new Run(p.exitValue(), out, Files.readString(err));
    }

    private List<Path> leftInTmp() throws IOException {
        try (Stream<Path> s = Files.walk(tmp)) {
            return s.filter(p -> !p.equals(tmp)).toList();
        }
    }

    @Test
    void loadLeavesNothingWhetherItSucceedsOrFails() throws Exception {
        String model = Fixtures.file("tiny-llama").toString();
        for (String[] args : new String[][] {
                {"load", model, "--json"},
                {"load", model, "--host", "--copy"},
                // fails at once, while the warm-up thread is still writing its model
                {"load", model, "--device", "3"},
                {"load", "/no/such/model"}}) {
            Run r = run(args);
            assertEquals(args[args.length - 1].equals("3") || args[1].startsWith("/no") ? 2 : 0, r.exit(),
                    String.join(" ", args) + ": " + r);
            assertEquals(List.of(), leftInTmp(), String.join(" ", args) + " left files behind; " + r);
        }
    }

    @Test
    void benchKeepsOnlyItsCachedFileAndSaysSo() throws Exception {
        Run ok = run("bench", "--host", "--size", "1m", "--dir", work.toString(), "--no-sweep", "--repeat", "1");
        assertEquals(0, ok.exit(), ok.toString());
        Path cached = work.resolve("phoenix-bench-" + (1 << 20) + ".bin");
        assertTrue(Files.isRegularFile(cached));
        assertTrue(ok.out().contains(cached.toString()) && ok.out().contains("--clean"), ok.out());
        assertEquals(List.of(), leftInTmp());

        Run bad = run("bench", "--device", "7", "--size", "2m", "--dir", work.toString());
        assertEquals(2, bad.exit(), bad.toString());
        assertFalse(Files.exists(work.resolve("phoenix-bench-" + (2 << 20) + ".bin")));
        assertEquals(List.of(), leftInTmp());

        Run clean = run("bench", "--clean", "--dir", work.toString());
        assertEquals(0, clean.exit(), clean.toString());
        assertTrue(clean.out().contains("removed " + cached), clean.out());
        assertFalse(Files.exists(cached));
    }

    @Test
    void ctrlCWhileWritingTheBenchFileLeavesNoPartialFile() throws Exception {
        Path err = work.resolve("stderr");
        Path dir = Files.createDirectory(work.resolve("bench"));
        Process p = cli("bench", "--host", "--size", "2g", "--dir", dir.toString()).redirectError(err.toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!Files.readString(err).contains("writing") && p.isAlive() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(p.isAlive(), "bench ended before it could be interrupted: " + Files.readString(err));
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start();
            assertEquals(0, kill.waitFor());
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "SIGINT did not end bench");
        } finally {
            p.destroyForcibly();
        }
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(), s.toList(), "files left after Ctrl-C; stderr: " + Files.readString(err));
        }
        assertEquals(List.of(), leftInTmp());
    }

    @Test
    void benchRefusesAMissingDirInsteadOfCreatingIt() throws Exception {
        Path missing = work.resolve("no-such-dir");
        Cli r = Cli.run("bench", "--dir", missing.toString(), "--size", "1m", "--no-sweep", "--quiet");
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains(missing.toString()) && r.err().contains("no such directory"), r.err());
        assertFalse(Files.exists(missing));
        File f = work.resolve("a-file").toFile();
        assertTrue(f.createNewFile());
        Cli notDir = Cli.run("bench", "--dir", f.toString(), "--no-sweep", "--quiet");
        assertEquals(2, notDir.exit(), notDir.toString());
        assertTrue(notDir.err().contains("not a directory"), notDir.err());
    }
}
