package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.engine.EngineConfig;
import io.phxfs.kvcache.KvCacheConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the serve tests share: the fixtures, the real server in this JVM on a free port, and the
 * real clients run as processes (curl, and OpenAI's Node SDK installed from npm once per checkout
 * into build/openai-client).
 */
final class ServeTesting {
    private ServeTesting() {
    }

    static final ObjectMapper JSON = new ObjectMapper();

    /** The fixture models with their own tokenizers and chat templates. */
    static final String LLAMA = "tiny-chat-llama";
    static final String GPT2 = "tiny-chat-gpt2";

    /** testdata/fixtures: -Dphx.fixtures, else the fallback the pom sets. */
    static Path fixtures() {
        for (String key : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String v = System.getProperty(key);
            if (v != null && !v.isBlank() && !v.equals("${phx.fixtures}") && Files.isDirectory(Path.of(v))) {
                return Path.of(v).toAbsolutePath().normalize();
            }
        }
        throw new IllegalStateException("fixtures not found: -Dphx.fixtures=" + System.getProperty("phx.fixtures")
                + ", fallback " + System.getProperty("phx.fixtures.fallback"));
    }

    static Path model(String name) {
        return fixtures().resolve(name);
    }

    static JsonNode reference(String name) {
        try {
            return JSON.readTree(model(name).resolve("reference.json").toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The checkout's root: -Dphx.root (the pom sets it), else up from the working directory. */
    static Path root() {
        String r = System.getProperty("phx.root");
        if (r != null && !r.isBlank() && !r.startsWith("${") && Files.isRegularFile(Path.of(r, "phoenix"))) {
            return Path.of(r).toAbsolutePath().normalize();
        }
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("phoenix")) && Files.isDirectory(p.resolve("samples"))) {
                return p;
            }
        }
        throw new IllegalStateException("the checkout's root not found from " + Path.of("").toAbsolutePath());
    }

    /** A server in this JVM and what it logged. */
    record Running(ApiServer server, StringWriter log) implements AutoCloseable {
        String base() {
            return "http://127.0.0.1:" + server.port();
        }

        String v1() {
            return base() + "/v1";
        }

        @Override
        public void close() {
            server.close();
        }
    }

    static Running start(Path modelDir, String name, int maxRunning, int maxWaiting, Path kvConfig) throws Exception {
        return start(modelDir, name, maxRunning, maxWaiting, kvConfig, HttpPolicy.defaults());
    }

    /** A server with this API key, salt and limits. */
    static Running start(Path modelDir, String name, int maxRunning, int maxWaiting, Path kvConfig, HttpPolicy policy)
            throws Exception {
        EngineConfig c = EngineConfig.of(modelDir).withLimits(maxRunning, maxWaiting);
        if (kvConfig != null) {
            c = c.withKvCache(KvCacheConfig.load(kvConfig));
        }
        StringWriter log = new StringWriter();
        return new Running(ApiServer.start(c, name, "127.0.0.1", 0, policy, new PrintWriter(log, true)), log);
    }

    static Running start(String fixture) throws Exception {
        return start(model(fixture), fixture, 8, 64, null);
    }

    /** A finished process. */
    record Proc(int exit, String out, String err) {
        JsonNode json() {
            try {
                return JSON.readTree(out);
            } catch (IOException e) {
                throw new UncheckedIOException("not JSON: " + this, e);
            }
        }

        @Override
        public String toString() {
            return "exit " + exit + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
        }
    }

    static Proc run(List<String> cmd, Path dir, Duration timeout) {
        return run(cmd, dir, timeout, java.util.Map.of());
    }

    /** Runs a command with these variables added to the environment. */
    static Proc run(List<String> cmd, Path dir, Duration timeout, java.util.Map<String, String> env) {
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.environment().putAll(env);
            if (dir != null) {
                pb.directory(dir.toFile());
            }
            Process p = pb.start();
            p.getOutputStream().close();
            CompletableFuture<byte[]> out = drain(p.getInputStream());
            CompletableFuture<byte[]> err = drain(p.getErrorStream());
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                fail("timed out after " + timeout + ": " + cmd + "\n--- stderr\n"
                        + new String(err.getNow(new byte[0]), StandardCharsets.UTF_8));
            }
            return new Proc(p.exitValue(), new String(out.join(), StandardCharsets.UTF_8),
                    new String(err.join(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + cmd, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static CompletableFuture<byte[]> drain(InputStream in) {
        CompletableFuture<byte[]> f = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (in) {
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                in.transferTo(b);
                f.complete(b.toByteArray());
            } catch (IOException e) {
                f.complete(new byte[0]);
            }
        });
        return f;
    }

    private static boolean onPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }

    /** curl, installed with apt-get (Debian's package) when missing. */
    static synchronized String curl() {
        if (!onPath("curl")) {
            boolean root = "root".equals(System.getProperty("user.name"));
            List<String> sudo = root ? List.of() : List.of("sudo", "-n");
            List<String> update = new ArrayList<>(sudo);
            update.addAll(List.of("apt-get", "update", "-qq"));
            List<String> install = new ArrayList<>(sudo);
            install.addAll(List.of("apt-get", "install", "-y", "-qq", "curl"));
            run(update, null, Duration.ofMinutes(5));
            Proc p = run(install, null, Duration.ofMinutes(5));
            assertTrue(onPath("curl"), "curl is missing and apt-get could not install it: " + p);
        }
        return "curl";
    }

    /** Runs curl with these arguments (-sS added). */
    static Proc curl(String... args) {
        List<String> cmd = new ArrayList<>(List.of(curl(), "-sS"));
        cmd.addAll(List.of(args));
        return run(cmd, null, Duration.ofMinutes(3));
    }

    /** The SDK's version range: the newest line that runs on Node 20 (openai 7 needs Node 22). */
    static final String OPENAI_SDK = "openai@6";

    /**
     * build/openai-client with OpenAI's Node SDK in node_modules (installed from the npm registry
     * the first time) and the tests' script beside it.
     */
    static synchronized Path openAiClient() throws IOException {
        assertTrue(onPath("node") && onPath("npm"), "node and npm are needed for the OpenAI SDK tests");
        Path dir = root().resolve("build/openai-client");
        Files.createDirectories(dir);
        if (!Files.isRegularFile(dir.resolve("node_modules/openai/package.json"))) {
            // a package of its own, installed into from inside it: npm's --prefix would also move
            // its global config to <prefix>/etc/npmrc, losing the machine's (a proxy's cafile, say)
            Path pkg = dir.resolve("package.json");
            if (!Files.isRegularFile(pkg)) {
                Files.writeString(pkg, "{\"name\": \"phoenix-openai-client\", \"private\": true}\n");
            }
            Proc p = run(List.of("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", OPENAI_SDK), dir,
                    Duration.ofMinutes(5));
            assertEquals(0, p.exit(), "npm install " + OPENAI_SDK + " failed: " + p);
        }
        Files.copy(root().resolve("samples/src/test/node/openai_client.mjs"), dir.resolve("openai_client.mjs"),
                StandardCopyOption.REPLACE_EXISTING);
        return dir;
    }

    /** Runs the SDK script on a job and returns what it printed. */
    static JsonNode sdk(JsonNode job) throws IOException {
        Path dir = openAiClient();
        Path file = Files.createTempFile(dir, "job", ".json");
        try {
            JSON.writeValue(file.toFile(), job);
            Proc p = run(List.of("node", "openai_client.mjs", file.toString()), dir, Duration.ofMinutes(5));
            assertEquals(0, p.exit(), "the OpenAI SDK script failed: " + p);
            return p.json();
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** Runs a script of the test's own (written beside the SDK) on a job and returns what it printed. */
    static JsonNode sdk(JsonNode job, String script) throws IOException {
        Path dir = openAiClient();
        Path js = Files.createTempFile(dir, "script", ".mjs");
        Path file = Files.createTempFile(dir, "job", ".json");
        try {
            Files.writeString(js, script);
            JSON.writeValue(file.toFile(), job);
            Proc p = run(List.of("node", js.toString(), file.toString()), dir, Duration.ofMinutes(5));
            assertEquals(0, p.exit(), "the OpenAI SDK script failed: " + p);
            return p.json();
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(js);
        }
    }

    /** Waits up to {@code timeout} for the condition. */
    static boolean await(BooleanSupplier c, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            if (c.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return c.getAsBoolean();
    }

    /** The value of one sample of a Prometheus text scrape, or NaN when absent. */
    static double sample(String scrape, String series) {
        for (String line : scrape.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return Double.NaN;
    }

    /** Whether the reference's last generated token is an EOS (then the finish reason is stop). */
    static String finishReason(JsonNode ref, JsonNode generation) {
        JsonNode eos = ref.path("generation_eos_token_id");
        JsonNode gen = generation.path("generated");
        int last = gen.get(gen.size() - 1).asInt();
        boolean stop = false;
        if (eos.isArray()) {
            for (JsonNode e : eos) {
                stop |= e.asInt() == last;
            }
        } else {
            stop = eos.asInt() == last;
        }
        return stop || gen.size() < ref.path("max_new_tokens").asInt() ? "stop" : "length";
    }
}
