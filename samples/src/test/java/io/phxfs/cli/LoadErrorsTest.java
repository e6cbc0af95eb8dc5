package io.phxfs.cli;

import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.ModelFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code phoenix load} given paths the OS refuses or files of another kind: one line naming the
 * path and the OS's reason (or what the file is), and the exit status that says whose fault it
 * is (2: the input, 1: the environment, such as a permission).
 */
class LoadErrorsTest {
    /** Shared, so that the class path is copied for the unprivileged user once. */
    @TempDir
    static Path shared;

    private static Unprivileged as;

    private Path dir;

    @BeforeAll
    static void unprivileged() throws IOException {
        as = Unprivileged.in(shared);
    }

    @BeforeEach
    void testDir() throws IOException {
        dir = Files.createTempDirectory(shared, "t");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** Modes the test took away, given back so that the temporary directory can be deleted. */
    private final List<Path> restricted = new ArrayList<>();

    @AfterEach
    void restore() throws IOException {
        for (Path p : restricted) {
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
        }
    }

    private void chmod(Path p, String mode) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(mode));
        restricted.add(p);
    }

    /** A copy of a fixture model that others may read. */
    private Path model(Path d) throws IOException {
        Files.createDirectories(d);
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path f = Files.copy(Fixtures.file("tiny-gpt2/model.safetensors"), d.resolve(ModelFiles.SINGLE_FILE));
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
        return f;
    }

    private static void assertFails(Cli r, int exit, String stderr) {
        assertEquals(stderr + "\n", r.err(), r.toString());
        assertEquals(exit, r.exit(), r.toString());
        assertEquals("", r.out(), r.toString());
    }

    @Test
    void anUnreadableFileNamesItAndEacces() throws Exception {
        as.requireUser();
        Path f = model(dir.resolve("m"));
        chmod(f, "---------");
        assertFails(as.run("load", "--host", f.toString()), 1, "phoenix: open " + f + ": EACCES (Permission denied)");
        assertFails(as.run("load", "--host", f.getParent().toString()), 1,
                "phoenix: open " + f + ": EACCES (Permission denied)");
    }

    @Test
    void aDirectoryThatCannotBeEnteredIsNamed() throws Exception {
        as.requireUser();
        Path f = model(dir.resolve("locked"));
        chmod(f.getParent(), "rw-------");
        String expected = "phoenix: open " + f + ": EACCES (Permission denied); no permission to enter directory "
                + f.getParent();
        // not "no model.safetensors in the directory" nor "no such file": the file is there
        assertFails(as.run("load", "--host", f.getParent().toString()), 1, expected);
        assertFails(as.run("load", "--host", f.toString()), 1, expected);
    }

    @Test
    void aDirectoryThatCannotBeListedStillLoadsByTheExpectedName() throws Exception {
        as.requireUser();
        for (String mode : new String[] {"rwx--x--x", "-wx--x--x"}) {
            Path f = model(dir.resolve("unlisted-" + mode.replace('-', '_')));
            chmod(f.getParent(), mode);
            Cli r = as.run("load", "--host", f.getParent().toString());
            assertEquals(0, r.exit(), mode + ": " + r);
            assertTrue(r.out().startsWith("loaded 28 tensors"), mode + ": " + r);
        }
    }

    @Test
    void anUnreadableShardOrIndexIsNamed() throws Exception {
        as.requireUser();
        Path shard = model(dir.resolve("sharded"));
        Path idx = Files.writeString(shard.resolveSibling(ModelFiles.INDEX_FILE),
                "{\"weight_map\":{\"wte.weight\":\"model.safetensors\"}}");
        Files.setPosixFilePermissions(idx, PosixFilePermissions.fromString("rw-r--r--"));
        chmod(shard, "---------");
        assertFails(as.run("load", "--host", idx.toString()), 1, "phoenix: open " + shard + ": EACCES (Permission denied)");
        chmod(idx, "---------");
        assertFails(as.run("load", "--host", idx.toString()), 1, "phoenix: open " + idx + ": EACCES (Permission denied)");
    }

    @Test
    void pathsThatLeadToNoFileAreInvalidInput() throws IOException {
        Path missing = dir.resolve("absent");
        assertFails(Cli.run("load", "--host", missing.toString()), 2,
                "phoenix: open " + missing + ": ENOENT (No such file or directory)");
        Path file = Files.writeString(dir.resolve("x.safetensors"), "x");
        assertFails(Cli.run("load", "--host", file.resolve("y").toString()), 2,
                "phoenix: open " + file.resolve("y") + ": ENOTDIR (Not a directory)");
        Path loop = Files.createSymbolicLink(dir.resolve("loop"), dir.resolve("loop"));
        assertFails(Cli.run("load", "--host", loop.toString()), 2,
                "phoenix: open " + loop + ": ELOOP (Too many levels of symbolic links)");
    }

    @Test
    void filesOfAnotherKindSayWhatTheyAre() throws IOException {
        Path text = Files.writeString(dir.resolve("model.safetensors"), "hello world, this is text\n");
        assertFails(Cli.run("load", "--host", text.toString()), 2,
                "phoenix: error: " + text + ": not a safetensors file: it starts with text \"hello world, this is text\\n\"");
        Path pt = Files.write(dir.resolve("pytorch_model.safetensors"),
                "PK\u0003\u0004\u0014\u0000\u0000\u0000\u0008\u0000".getBytes(StandardCharsets.ISO_8859_1));
        assertFails(Cli.run("load", "--host", pt.toString()), 2, "phoenix: error: " + pt
                + ": not a safetensors file: it is a zip archive (a PyTorch .bin or .pt checkpoint is one; convert it"
                + " to safetensors)");
        Path config = Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"gpt2\", \"n_embd\": 768}");
        assertFails(Cli.run("load", "--host", config.toString()), 2, "phoenix: error: " + config
                + ": a JSON file that is not a safetensors index: no weight_map among its fields 'model_type',"
                + " 'n_embd' (give the model directory or its .safetensors file)");
    }

    @Test
    void aDirectoryThatCannotBeWrittenNamesTheFileBeingCreated() throws Exception {
        as.requireUser();
        Path out = Files.createDirectory(dir.resolve("readonly"));
        chmod(out, "r-xr-xr-x");
        Cli r = as.run("gen-model", out.toString(), "--size", "400k", "--hidden", "64", "--intermediate", "224",
                "--vocab", "100", "--heads", "4", "--kv-heads", "2");
        // the first thing it creates there: the staging directory its files are written into
        assertTrue(r.err().matches("phoenix: create " + java.util.regex.Pattern.quote(out.toString())
                + "/\\.gen-model-\\d+: EACCES \\(Permission denied\\)\n"), r.toString());
        assertEquals(1, r.exit(), r.toString());
    }
}
