package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code phoenix kv bench --redis redis-cluster://...} against a real Redis Cluster of three
 * masters (Debian's redis-server; the replicas and failovers are kvcache-tier's tests), and its
 * answers to a malformed or unreachable cluster URL: one line, exit 2, no password.
 */
class KvClusterBenchTest {
    private static final List<Process> SERVERS = new ArrayList<>();
    private static Path base;
    private static String url;

    @TempDir
    Path dir;

    private static String binary(String name) {
        for (String d : List.of("/usr/bin/", "/usr/local/bin/")) {
            if (Files.isExecutable(Path.of(d + name))) {
                return d + name;
            }
        }
        return null;
    }

    private static String cli(String cli, int port, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(cli, "-h", "127.0.0.1", "-p", String.valueOf(port)));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(30, TimeUnit.SECONDS);
        return out;
    }

    @BeforeAll
    static void startCluster() throws Exception {
        String server = binary("redis-server");
        String cli = binary("redis-cli");
        if (server == null || cli == null) {
            String why = "KvClusterBenchTest: SKIPPING: no redis-server/redis-cli binary (scripts/setup.sh installs"
                    + " Debian's); kv bench --redis redis-cluster:// is NOT tested here";
            System.err.println("*".repeat(100) + "\n" + why + "\n" + "*".repeat(100));
            Assumptions.abort(why);
        }
        base = Files.createTempDirectory("kv-bench-cluster");
        int[] ports = new int[6];
        List<ServerSocket> held = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            held.add(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
            ports[i] = held.get(i).getLocalPort();
        }
        for (ServerSocket s : held) {
            s.close();
        }
        List<String> create = new ArrayList<>(List.of("--cluster", "create"));
        for (int i = 0; i < 3; i++) {
            Path d = Files.createDirectories(base.resolve("n" + i));
            SERVERS.add(new ProcessBuilder(server, "--port", String.valueOf(ports[i]), "--bind", "127.0.0.1", "--dir",
                    d.toString(), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
                    String.valueOf(ports[i + 3]), "--save", "", "--appendonly", "no", "--protected-mode", "no")
                    .redirectErrorStream(true).redirectOutput(d.resolve("redis.log").toFile()).start());
            create.add("127.0.0.1:" + ports[i]);
        }
        for (int i = 0; i < 3; i++) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (!cli(cli, ports[i], "ping").contains("PONG")) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("redis-server did not start on " + ports[i]);
                }
                Thread.sleep(30);
            }
        }
        create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        String out = cli(cli, ports[0], create.toArray(String[]::new));
        assertTrue(out.contains("All 16384 slots covered"), out);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int i = 0; i < 3; i++) {
            while (!cli(cli, ports[i], "cluster", "info").contains("cluster_state:ok")) {
                assertTrue(System.nanoTime() < deadline, "the cluster did not come up");
                Thread.sleep(50);
            }
        }
        url = "redis-cluster://" + List.of(0, 1, 2).stream().map(i -> "127.0.0.1:" + ports[i])
                .collect(Collectors.joining(","));
    }

    @AfterAll
    static void stopCluster() throws Exception {
        for (Process p : SERVERS) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        if (base != null) {
            try (var s = Files.walk(base)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @Test
    void benchAgainstAClusterReportsTheTierBesideLettucesClusterClient() throws Exception {
        Cli r = Cli.run("kv", "bench", "--layout", "tiny-llama", "--chunks", "6", "--repeat", "2", "--host", "--json",
                "--dir", dir.toString(), "--redis", url);
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        for (String f : List.of("redis_store_gb_per_s", "redis_retrieve_gb_per_s", "lettuce_set_gb_per_s",
                "lettuce_get_gb_per_s", "redis_store_ratio", "redis_retrieve_ratio")) {
            assertTrue(j.get(f).asDouble() > 0, f + ": " + r);
        }
        assertEquals("cluster-async", j.get("redis_baseline").asText());
        assertTrue(r.err().contains("redis cluster run 2/2"), r.err());
        assertFalse(r.err().contains("\tat "), "a stack trace on stderr: " + r.err());
        try (var left = Files.list(dir)) {
            assertEquals(0, left.count(), "the bench removes its files");
        }
        Cli text = Cli.run("kv", "bench", "--layout", "tiny-llama", "--chunks", "2", "--repeat", "1", "--host", "--dir",
                dir.toString(), "--redis", url, "--quiet");
        assertEquals(0, text.exit(), text.toString());
        assertTrue(text.out().contains("redis cluster store ") && text.out().contains("vs lettuce cluster SET (async)"),
                text.out());
    }

    @Test
    void aMalformedOrUnreachableClusterIsOneLineAndExitTwo() throws Exception {
        String secret = "pw-not-to-show-41";
        Cli r = Cli.run("kv", "bench", "--host", "--redis", "redis-cluster://kv:" + secret + "@127.0.0.1:70000");
        assertEquals(2, r.exit(), r.toString());
        assertEquals("phoenix: error: --redis 'redis-cluster://kv:***@127.0.0.1:70000': port 70000 of '127.0.0.1:70000'"
                + " is out of range 1..65535", r.err().strip());

        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort();
        }
        long t0 = System.nanoTime();
        r = Cli.run("kv", "bench", "--host", "--dir", dir.toString(), "--redis",
                "redis-cluster://kv:" + secret + "@127.0.0.1:" + closed);
        assertEquals(2, r.exit(), r.toString());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().startsWith("phoenix: error: --redis 'redis-cluster://kv:***@127.0.0.1:" + closed
                + "': no node of the cluster answered"), r.err());
        assertFalse(r.err().contains(secret) || r.out().contains(secret), r.toString());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20), "it failed before the disk measurements");

        r = Cli.run("kv", "bench", "--host", "--redis", "redis://h1:6379,h2:6379");
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("a list of hosts is a cluster, redis-cluster://"), r.err());
    }
}
