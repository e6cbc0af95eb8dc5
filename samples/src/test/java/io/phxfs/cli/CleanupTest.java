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
import java.util.Map;
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

    /**
     * A JVM started under a shell's background job (nohup, a CI runner's) inherits SIGINT
     * ignored, and the JVM then leaves it ignored: Ctrl-C could not be tested there. coreutils'
     * env restores the default disposition, as a terminal's foreground job has it.
     */
    private static final List<String> DEFAULT_SIGINT = defaultSigint();

    private static List<String> defaultSigint() {
        try {
            Process p = new ProcessBuilder("env", "--default-signal=INT", "true").redirectErrorStream(true).start();
            return p.waitFor() == 0 ? List.of("env", "--default-signal=INT") : List.of();
        } catch (IOException | InterruptedException e) {
            return List.of();
        }
    }

    private ProcessBuilder cli(String... args) {
        List<String> cmd = new ArrayList<>(DEFAULT_SIGINT);
        cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
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
                {"load", "/no/such/model"},
                // refused by picocli before the command runs: the warm-up started with the
                // command line is waited for and cleans up all the same
                {"load", model, "--no-such-option"}}) {
            Run r = run(args);
            boolean refused = args[args.length - 1].equals("3") || args[1].startsWith("/no")
                    || args[args.length - 1].startsWith("--no-such");
            assertEquals(refused ? 2 : 0, r.exit(),
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

    /** Starts {@code args}, waits until {@code started} holds, then sends {@code signal}; returns stderr. */
    private String interruptWhen(String signal, java.util.function.BooleanSupplier started, String... args) throws Exception {
        Path err = work.resolve("stderr-" + System.nanoTime());
        Process p = cli(args).redirectError(err.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (!started.getAsBoolean() && p.isAlive() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(p.isAlive(), String.join(" ", args) + " ended before it could be interrupted: " + Files.readString(err));
            assertTrue(started.getAsBoolean(), String.join(" ", args) + " never reached the point to interrupt: "
                    + Files.readString(err));
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start();
            assertEquals(0, kill.waitFor());
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "SIG" + signal + " did not end " + String.join(" ", args));
            if (!signal.equals("KILL")) {
                assertEquals(130, p.exitValue(), "exit status after SIG" + signal + "; stderr: " + Files.readString(err));
            }
        } finally {
            p.destroyForcibly();
        }
        return Files.readString(err);
    }

    private static boolean anyFile(Path dir, java.util.function.Predicate<Path> what) {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.anyMatch(what);
        } catch (IOException e) {
            return false; // not there yet, or deleted under the walk
        }
    }

    private static Map<Path, String> digests(Path dir) throws Exception {
        Map<Path, String> out = new java.util.TreeMap<>();
        for (Path f : contents(dir)) {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(f));
            out.put(dir.relativize(f), java.util.HexFormat.of().formatHex(d));
        }
        return out;
    }

    private static List<Path> contents(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(q -> !q.equals(dir)).toList();
        }
    }

    @Test
    void ctrlCDuringGenModelLeavesNeitherItsFilesNorTheDirectoryItMade() throws Exception {
        // a directory gen-model creates goes with it; one that existed keeps only what was there before
        Path made = work.resolve("new-model");
        Path existing = Files.createDirectory(work.resolve("existing"));
        Path mine = Files.writeString(existing.resolve("notes.txt"), "the user's");
        // a directory holding a finished model: the interrupted run over it leaves that model byte for byte
        Path model = work.resolve("model");
        assertEquals(0, Cli.run("gen-model", model.toString(), "--size", "4m", "--hidden", "256", "--intermediate", "512",
                "--vocab", "1000", "--heads", "4", "--kv-heads", "2").exit());
        Map<Path, String> before = digests(model);
        for (Path target : List.of(made, existing, model)) {
            String err = interruptWhen("INT", () -> anyFile(target, f -> f.toString().endsWith(".tmp") && f.toFile().length() > (16 << 20)),
                    "gen-model", target.toString(), "--size", "3g", "--shards", "2");
            assertTrue(err.contains("interrupted"), err);
            if (target == made) {
                assertFalse(Files.exists(made), "the directory gen-model made is still there: " + err);
            } else if (target == model) {
                assertEquals(before, digests(model), "the model already there was changed: " + err);
            } else {
                assertEquals(List.of(mine), contents(existing), "gen-model left files behind: " + err);
            }
        }
        assertEquals(List.of(), leftInTmp());
    }

    @Test
    void ctrlCDuringKvBenchLeavesNoWorkDirectory() throws Exception {
        Path dir = work.resolve("kv/runs"); // missing, and its parent too: kv bench creates both, and removes both
        String err = interruptWhen("INT", () -> anyFile(dir, f -> f.toString().endsWith(".kv")),
                "kv", "bench", "--host", "--dir", dir.toString(), "--chunks", "64", "--fsync", "none");
        assertFalse(Files.exists(work.resolve("kv")), "kv bench left the directories it made behind: " + err);
        assertEquals(List.of(), leftInTmp());
    }

    /** A directory kv bench made is removed only if empty: files another run put there meanwhile stay. */
    @Test
    void ctrlCDuringKvBenchKeepsWhatOthersPutInTheDirectoriesItMade() throws Exception {
        Path made = work.resolve("scratch");
        Path dir = made.resolve("a");
        Path theirs = made.resolve("b/kept-tier.kv");
        String err = interruptWhen("INT", () -> {
            if (!anyFile(dir, f -> f.toString().endsWith(".kv"))) {
                return false;
            }
            try {
                Files.createDirectories(theirs.getParent());
                Files.writeString(theirs, "another run's kept chunks");
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return true;
        }, "kv", "bench", "--host", "--dir", dir.toString(), "--chunks", "64", "--fsync", "none");
        assertTrue(Files.exists(theirs), "Ctrl-C deleted files kv bench never made: " + err);
        assertFalse(Files.exists(dir), "its own directory stays: " + err);
    }

    @Test
    void sigkillLeavesNoExtractedLibraryBehind() throws Exception {
        // the library is unlinked once loaded, so even a JVM that runs no hook leaves nothing in java.io.tmpdir
        Path dir = Files.createDirectory(work.resolve("kv-killed"));
        interruptWhen("KILL", () -> anyFile(dir, f -> f.toString().endsWith(".kv")), "kv", "bench", "--host", "--dir",
                dir.toString(), "--chunks", "64", "--fsync", "none");
        assertEquals(List.of(), leftInTmp(), "a killed JVM left its extracted libphoenix behind");
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
