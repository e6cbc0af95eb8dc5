package io.phxfs.cli;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * Runs the phoenix CLI as a user that file permissions apply to. Root reads a mode-000 file
 * and enters a mode-0600 directory, so as root (as CI runs) the CLI runs in a JVM of its own
 * under {@code setpriv} as "nobody"; as any other user it runs in-process. The CLI's classes
 * and jars are copied where that user can read them: the build's may lie under /root.
 */
final class Unprivileged {
    private static final Set<PosixFilePermission> DIR = PosixFilePermissions.fromString("rwxr-xr-x");
    private static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-r--r--");

    private final Path work;
    private final List<String> prefix;
    private final String classPath;
    /** Why no unprivileged user can run the CLI here; null when one can. */
    private final String unavailable;

    private Unprivileged(Path work, List<String> prefix, String classPath, String unavailable) {
        this.work = work;
        this.prefix = prefix;
        this.classPath = classPath;
        this.unavailable = unavailable;
    }

    /**
     * Sets up under {@code work}, which must be reachable by others. Where running as root
     * there is no user to drop to, {@link #requireUser()} aborts the tests that need one.
     */
    static Unprivileged in(Path work) throws IOException {
        if (!isRoot()) {
            return new Unprivileged(work, null, null, null);
        }
        String uid = output("id", "-u", "nobody");
        String gid = uid == null ? null : output("id", "-g", "nobody");
        if (uid == null || gid == null || output("setpriv", "--version") == null) {
            return new Unprivileged(work, null, null,
                    "running as root without user 'nobody' or setpriv: permissions cannot be tested");
        }
        Files.setPosixFilePermissions(work, DIR);
        for (Path p = work.toAbsolutePath().getParent(); p != null; p = p.getParent()) {
            if (!Files.getPosixFilePermissions(p).contains(PosixFilePermission.OTHERS_EXECUTE)) {
                return new Unprivileged(work, null, null,
                        p + " cannot be entered by others, so 'nobody' cannot reach the test files");
            }
        }
        Path cp = Files.createDirectory(work.resolve("classpath"));
        List<String> entries = new ArrayList<>();
        int i = 0;
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path src = Path.of(e);
            if (!Files.exists(src)) {
                continue;
            }
            Path dst = cp.resolve(i++ + "-" + src.getFileName());
            copy(src, dst);
            entries.add(dst.toString());
        }
        List<String> prefix = List.of("setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "--");
        return new Unprivileged(work, prefix, String.join(File.pathSeparator, entries), null);
    }

    /** Aborts the calling test, with the reason, where no unprivileged user can run the CLI. */
    void requireUser() {
        if (unavailable != null) {
            abort(unavailable);
        }
    }

    /** Runs {@code phoenix args...} as the unprivileged user. */
    Cli run(String... args) throws IOException, InterruptedException {
        requireUser();
        if (prefix == null) {
            return Cli.run(args);
        }
        List<String> cmd = new ArrayList<>(prefix);
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of("-XX:-UsePerfData", "--enable-native-access=ALL-UNNAMED", "-cp", classPath,
                "io.phxfs.cli.PhoenixCli"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(work.toFile());
        // the fake connector keeps a GPU host's CUDA out of it; the library is taken from the copied jar
        pb.environment().put("PHX_CONNECTOR", "fake");
        pb.environment().remove("PHX_LIBRARY_PATH");
        pb.environment().put("HOME", work.toString());
        Path err = work.resolve("stderr-" + System.nanoTime());
        pb.redirectError(err.toFile());
        Process proc = pb.start();
        byte[] out = proc.getInputStream().readAllBytes();
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "CLI did not finish: " + cmd);
        String stderr = Files.readString(err);
        Files.delete(err);
        return new Cli(proc.exitValue(), new String(out, StandardCharsets.UTF_8), stderr);
    }

    private static boolean isRoot() throws IOException {
        return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    }

    private static void copy(Path src, Path dst) throws IOException {
        if (!Files.isDirectory(src)) {
            Files.copy(src, dst);
            Files.setPosixFilePermissions(dst, FILE);
            return;
        }
        try (Stream<Path> all = Files.walk(src)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                Path to = dst.resolve(src.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(to);
                    Files.setPosixFilePermissions(to, DIR);
                } else {
                    Files.copy(p, to);
                    Files.setPosixFilePermissions(to, FILE);
                }
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    /** The command's trimmed stdout, or null when it cannot run or fails. */
    private static String output(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return p.waitFor() == 0 ? s : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
