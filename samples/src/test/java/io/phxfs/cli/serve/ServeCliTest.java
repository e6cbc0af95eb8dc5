package io.phxfs.cli.serve;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code phoenix serve} as a process: the line it prints when listening, SIGTERM draining the
 * stream under way to its end and exiting 0, and its refusals of a bad command line.
 */
class ServeCliTest {
    private static final Pattern URL = Pattern.compile("listening on (http://127\\.0\\.0\\.1:(\\d+)/v1)");

    /** This JVM's class path in a new JVM: the CLI with DJL, the engine, Jetty and the natives. */
    static List<String> cli(String... args) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), "io.phxfs.cli.PhoenixCli"));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test
    void sigtermDrainsTheStreamUnderWayAndExitsZero(@TempDir Path tmp) throws Exception {
        Path err = tmp.resolve("stderr");
        Process server = new ProcessBuilder(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--port", "0", "--served-model-name", "tiny")).redirectError(err.toFile()).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertTrue(line != null, "nothing printed; stderr:\n" + Files.readString(err));
            Matcher m = URL.matcher(line);
            assertTrue(m.find(), "the URL in: " + line);
            String base = "http://127.0.0.1:" + m.group(2);
            assertTrue(line.startsWith("phoenix serve: tiny listening on "), line);

            // a stream of 2,000 tokens under way when SIGTERM comes
            String body = "{\"model\": \"tiny\", \"prompt\": \"The quick brown fox\", \"max_tokens\": 2000,"
                    + " \"ignore_eos\": true, \"stream\": true}";
            Process client = new ProcessBuilder(ServeTesting.curl(), "-sS", "-N", "-H", "Content-Type: application/json",
                    "--data-binary", body, base + "/v1/completions").start();
            BufferedReader events = new BufferedReader(new InputStreamReader(client.getInputStream(),
                    StandardCharsets.UTF_8));
            String first;
            do {
                first = events.readLine();
            } while (first != null && !first.startsWith("data: "));
            assertTrue(first != null, "the stream began");
            CompletableFuture<String> rest = CompletableFuture.supplyAsync(() -> {
                StringBuilder b = new StringBuilder();
                events.lines().forEach(l -> b.append(l).append('\n'));
                return b.toString();
            });
            server.destroy(); // SIGTERM
            assertTrue(server.waitFor(120, TimeUnit.SECONDS), "the server drained and exited");
            assertEquals(0, server.exitValue(), "exit status after SIGTERM; stderr:\n" + Files.readString(err));
            String tail = rest.get(30, TimeUnit.SECONDS);
            assertTrue(tail.endsWith("data: [DONE]\n\n"), "the stream under way was finished, not cut: ..."
                    + tail.substring(Math.max(0, tail.length() - 300)));
            assertTrue(tail.contains("\"finish_reason\":\"length\""), "it ran to its max_tokens");
            assertTrue(client.waitFor(10, TimeUnit.SECONDS));
            assertEquals(0, client.exitValue());
            String stderr = Files.readString(err);
            assertTrue(stderr.contains("phoenix serve: stopping, finishing 1 request"), stderr);
            assertTrue(stderr.contains("phoenix serve: stopped"), stderr);
            // nothing listens any more
            ServeTesting.Proc after = ServeTesting.run(List.of(ServeTesting.curl(), "-sS", base + "/health"), null,
                    Duration.ofSeconds(30));
            assertEquals(7, after.exit(), "curl: could not connect: " + after);
        } finally {
            server.destroyForcibly();
        }
    }

    /** Without --kv-config, LMCache's LMCACHE_* settings turn the KV tier on, and the prefix cache works through it. */
    @Test
    void lmcachesEnvironmentTurnsTheKvTierOn(@TempDir Path tmp) throws Exception {
        Path err = tmp.resolve("err.txt");
        ProcessBuilder pb = new ProcessBuilder(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(), "--port", "0",
                "--served-model-name", "tiny")).redirectError(err.toFile());
        pb.environment().put("LMCACHE_LOCAL_CPU", "True");
        pb.environment().put("LMCACHE_MAX_LOCAL_CPU_SIZE", "0.05");
        pb.environment().put("LMCACHE_CHUNK_SIZE", "16");
        Process server = pb.start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertTrue(line != null, "nothing printed; stderr:\n" + Files.readString(err));
            Matcher m = URL.matcher(line);
            assertTrue(m.find(), line);
            assertTrue(Files.readString(err).contains("phoenix serve: KV tier from the LMCACHE_* environment"),
                    Files.readString(err));
            String body = "{\"model\": \"tiny\", \"prompt\": \"" + "The quick brown fox jumps over the lazy dog. ".repeat(4)
                    + "\", \"max_tokens\": 2}";
            String v1 = "http://127.0.0.1:" + m.group(2) + "/v1/completions";
            for (int i = 0; i < 2; i++) {
                ServeTesting.Proc r = ServeTesting.run(List.of(ServeTesting.curl(), "-sS", "-H", "Content-Type: application/json",
                        "--data-binary", body, v1), null, Duration.ofMinutes(1));
                assertEquals(0, r.exit(), r.toString());
            }
            ServeTesting.Proc metrics = ServeTesting.run(List.of(ServeTesting.curl(), "-sS", "http://127.0.0.1:" + m.group(2)
                    + "/metrics"), null, Duration.ofMinutes(1));
            assertTrue(ServeTesting.sample(metrics.out(), "phoenix:prefix_cache_hits_total{model_name=\"tiny\"}") > 0,
                    "the second prompt's chunks came from the tier: " + metrics.out().lines()
                            .filter(l -> l.contains("prefix_cache")).toList());
        } finally {
            server.destroyForcibly();
            server.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void badCommandLinesAreRefusedWithStatus2(@TempDir Path tmp) throws Exception {
        ServeTesting.Proc missing = ServeTesting.run(cli("serve", tmp.resolve("nope").toString()), null,
                Duration.ofMinutes(1));
        assertEquals(2, missing.exit(), missing.toString());
        assertTrue(missing.err().contains("nope") && missing.err().contains("ENOENT"),
                missing.toString());

        // a checkpoint without its tokenizer: named, before the weights load
        Path noTokenizer = Files.createDirectory(tmp.resolve("no-tokenizer"));
        Files.copy(ServeTesting.model(ServeTesting.LLAMA).resolve("config.json"), noTokenizer.resolve("config.json"));
        ServeTesting.Proc untokenized = ServeTesting.run(cli("serve", noTokenizer.toString(), "--port", "0"), null,
                Duration.ofMinutes(1));
        assertEquals(2, untokenized.exit(), untokenized.toString());
        assertTrue(untokenized.err().contains(noTokenizer.resolve("tokenizer.json").toString())
                && untokenized.err().contains("ENOENT") && untokenized.err().contains("serve needs the checkpoint's tokenizer"),
                untokenized.toString());

        // a port another process holds: the OS's reason, and what to do
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            ServeTesting.Proc inUse = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                    "--port", String.valueOf(taken.getLocalPort())), null, Duration.ofMinutes(2));
            assertEquals(1, inUse.exit(), inUse.toString());
            assertTrue(inUse.err().contains("Failed to bind to") && inUse.err().contains("Address already in use")
                    && inUse.err().contains("choose another --port"), inUse.toString());
        }

        Path yaml = tmp.resolve("kv.yaml");
        Files.writeString(yaml, "chunk_sizes: 256\n");
        ServeTesting.Proc badKv = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--kv-config", yaml.toString(), "--port", "0"), null, Duration.ofMinutes(1));
        assertEquals(2, badKv.exit(), badKv.toString());
        assertTrue(badKv.err().contains("unknown setting 'chunk_sizes'"), badKv.toString());

        // LMCache's environment, as a vLLM server with LMCache reads it, when there is no --kv-config
        ServeTesting.Proc badEnv = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--port", "0"), null, Duration.ofMinutes(1), java.util.Map.of("LMCACHE_CHUNK_SIZE", "zero"));
        assertEquals(2, badEnv.exit(), badEnv.toString());
        assertTrue(badEnv.err().contains("LMCACHE_CHUNK_SIZE"), badEnv.toString());

        ServeTesting.Proc badPort = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--port", "70000"), null, Duration.ofMinutes(1));
        assertEquals(2, badPort.exit(), badPort.toString());
        assertTrue(badPort.err().contains("--port 70000"), badPort.toString());

        ServeTesting.Proc badIdle = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--idle-prefix-bytes", "4GB", "--port", "0"), null, Duration.ofMinutes(1));
        assertEquals(2, badIdle.exit(), badIdle.toString());
        assertTrue(badIdle.err().contains("--idle-prefix-bytes 4GB") && badIdle.err().contains("ambiguous"), badIdle.toString());

        // vLLM's pair of tool flags: one without the other, or a parser this server lacks, before the model loads
        ServeTesting.Proc autoAlone = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--enable-auto-tool-choice", "--port", "0"), null, Duration.ofMinutes(1));
        assertEquals(2, autoAlone.exit(), autoAlone.toString());
        assertTrue(autoAlone.err().contains("--enable-auto-tool-choice requires --tool-call-parser (hermes, llama3_json,"
                + " mistral)"), autoAlone.toString());
        ServeTesting.Proc badParser = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--enable-auto-tool-choice", "--tool-call-parser", "pythonic", "--port", "0"), null, Duration.ofMinutes(1));
        assertEquals(2, badParser.exit(), badParser.toString());
        assertTrue(badParser.err().contains("--tool-call-parser pythonic: unknown tool call parser"), badParser.toString());
        ServeTesting.Proc badReasoning = ServeTesting.run(cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(),
                "--reasoning-parser", "granite", "--port", "0"), null, Duration.ofMinutes(1));
        assertEquals(2, badReasoning.exit(), badReasoning.toString());
        assertTrue(badReasoning.err().contains("--reasoning-parser granite: unknown reasoning parser \"granite\"; this"
                + " server has deepseek_r1, qwen3"), badReasoning.toString());

        ServeTesting.Proc help = ServeTesting.run(cli("serve", "--help"), null, Duration.ofMinutes(1));
        assertEquals(0, help.exit(), help.toString());
        for (String option : List.of("--bind", "--port", "--served-model-name", "--kv-config", "--device",
                "--max-running", "--max-waiting", "--idle-prefix-bytes", "--enable-auto-tool-choice",
                "--tool-call-parser", "--reasoning-parser")) {
            assertTrue(help.out().contains(option), option + " in\n" + help.out());
        }
    }
}
