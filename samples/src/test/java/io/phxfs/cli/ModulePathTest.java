package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.safetensors.Fixtures;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CLI as an application on the module path would run it: every Phoenix jar a named
 * module, native access granted to io.phxfs.core and io.phxfs.safetensors only. The other CLI tests run on the class path (they share a package with the
 * loader's test-jar), so this is where a broken module descriptor, a missing requires/opens,
 * or libphoenix.so not being found from a named module shows.
 */
class ModulePathTest {
    /** The jars (or class directories) of the CLI's runtime modules, from this JVM's class path. */
    private static String modulePath() {
        List<String> mp = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(e);
            String name = p.getFileName().toString();
            boolean mainClasses = name.equals("classes") && p.getParent().getFileName().toString().equals("target")
                    && Files.isRegularFile(p.resolve("io/phxfs/cli/PhoenixCli.class"));
            boolean dependency = name.endsWith(".jar") && !name.endsWith("-tests.jar")
                    && (name.startsWith("phoenix-core-") || name.startsWith("phoenix-native-")
                        || name.startsWith("safetensors-loader-") || name.startsWith("picocli-")
                        || name.startsWith("jackson-core-")
                        // s3:// in safetensors-loader: the AWS SDK's signer and profile modules, with theirs
                        || e.contains(File.separator + "software" + File.separator + "amazon" + File.separator + "awssdk"
                            + File.separator)
                        || e.contains(File.separator + "org" + File.separator + "reactivestreams" + File.separator)
                        || e.contains(File.separator + "org" + File.separator + "slf4j" + File.separator + "slf4j-api"));
            if (mainClasses || dependency) {
                mp.add(e);
            }
        }
        assertTrue(mp.size() >= 6, "expected samples' classes, five jars and the AWS SDK's on the class path: " + mp);
        return String.join(File.pathSeparator, mp);
    }

    @Test
    void loadRunsAsNamedModulesWithNativeAccessForThoseTwoOnly() throws Exception {
        Path model = Fixtures.file("tiny-gpt2/model.safetensors");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java,
                "--module-path", modulePath(),
                "--enable-native-access=io.phxfs.core,io.phxfs.safetensors",
                // warn, not deny: Libc falls back quietly when refused, and a warning on stderr
                // is what shows a module that needed native access and was not granted it
                "--illegal-native-access=warn",
                "-m", "io.phxfs.cli/io.phxfs.cli.PhoenixCli",
                "load", "--host", "--checksums", "--json", model.toString());
        // --host maps the file through io.phxfs.safetensors' own libc calls; the fake connector
        // keeps a GPU host's CUDA out of it
        pb.environment().put("PHX_CONNECTOR", "fake");
        pb.environment().remove("PHX_LIBRARY_PATH");
        Path err = Files.createTempFile("phx-modpath", ".err");
        pb.redirectError(err.toFile());
        Process proc = pb.start();
        byte[] out = proc.getInputStream().readAllBytes();
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "CLI did not finish");
        String stderr = Files.readString(err);
        Files.deleteIfExists(err);
        String stdout = new String(out, StandardCharsets.UTF_8);
        assertEquals(0, proc.exitValue(), "stdout:\n" + stdout + "\nstderr:\n" + stderr);
        // a restricted call from any other module (or from these, were they unnamed) warns
        assertFalse(stderr.contains("WARNING"), stderr);

        JsonNode tensors = new ObjectMapper().readTree(stdout).path("tensors");
        Map<String, Fixtures.RefTensor> ref = Fixtures.reference().get("tiny-gpt2/model.safetensors").tensors();
        assertFalse(ref.isEmpty());
        for (Map.Entry<String, Fixtures.RefTensor> e : ref.entrySet()) {
            assertEquals(e.getValue().sha256(), tensors.path(e.getKey()).path("sha256").asText(), e.getKey());
        }
    }

    @Test
    void versionReadsItsResourceAsANamedModule() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "--module-path", modulePath(),
                "--enable-native-access=io.phxfs.core,io.phxfs.safetensors", "--illegal-native-access=deny",
                "-m", "io.phxfs.cli/io.phxfs.cli.PhoenixCli", "--version").redirectErrorStream(true);
        pb.environment().remove("PHX_LIBRARY_PATH");
        Process proc = pb.start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "CLI did not finish");
        assertEquals(0, proc.exitValue(), out);
        String pom = VersionTest.pomVersion();
        assertEquals("phoenix " + pom + "\nlibphoenix " + VersionTest.release(pom) + "\n", out);
    }
}
