package io.phxfs.kvcache;

import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Volume;
import java.io.IOException;
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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.AbstractWaitStrategy;

/**
 * A real Redis Cluster for a test class: Debian's {@code redis-server}, 3 masters and 3 replicas
 * on free loopback ports in a temporary directory: each node a container of {@link RedisImage}'s
 * image through Testcontainers where a Docker engine answers (on the host's network, so that the
 * addresses the cluster announces are the ones the client reaches; the temporary directory
 * mounted at the same path, the processes running as its owner), otherwise a plain process, and
 * the output says which, made with {@code redis-cli --cluster create
 * --cluster-replicas 1} and ready once every node says {@code cluster_state:ok} and every replica's
 * link is up. {@link #kill} ends a node with SIGKILL, {@link #pause} stops it with SIGSTOP (it
 * keeps its sockets and answers nothing), {@link #restart} brings a node back with its data
 * directory, where it rejoins the cluster. In containers these are {@code docker kill},
 * {@code docker pause}/{@code unpause} (the cgroup freezer) and {@code docker start}.
 *
 * <p>{@link Security#ACL}: the default user has a password ({@code requirepass}), the tier logs in
 * as {@link #USER}, an ACL user allowed only the commands the tier and Lettuce send, and replicas
 * log in to their masters as another ACL user ({@code masteruser}/{@code masterauth}).
 * {@link Security#TLS}: TLS only (no plain port), for clients, the cluster bus and replication,
 * client certificates required; the CA, server and client certificates are made by
 * {@code openssl} in the temporary directory.
 *
 * <p>Without {@code redis-server}, {@code redis-cli} (or {@code openssl} for TLS) the class is
 * skipped, with the reason on stderr.
 */
final class RedisCluster implements BeforeAllCallback, AfterAllCallback {
    enum Security { NONE, ACL, TLS }

    /** The tier's ACL user and its password (with characters a URL must escape). */
    static final String USER = "kvtier";
    static final String PASSWORD = "s3cr:t@w/rd%x";
    /** The password of the default user, for the administration here. */
    static final String ADMIN_PASSWORD = "admin-pw-81";
    private static final String REPLICATION_USER = "replicator";
    private static final String REPLICATION_PASSWORD = "repl-pw-27";
    /** Short, so that a killed master's replica is promoted in about 3 s. */
    static final int NODE_TIMEOUT_MS = 2000;

    private final Security security;
    private Path dir;
    private String server;
    private String cli;
    private final List<Node> nodes = new ArrayList<>();
    /** The image where the nodes run in containers, or null (plain processes). */
    private String image;

    /** One redis-server process. */
    static final class Node {
        final int port;
        final int busPort;
        final Path dir;
        Process process;
        GenericContainer<?> container;

        Node(int port, int busPort, Path dir) {
            this.port = port;
            this.busPort = busPort;
            this.dir = dir;
        }
    }

    RedisCluster(Security security) {
        this.security = security;
    }

    @Override
    public void beforeAll(ExtensionContext ctx) throws Exception {
        server = binary("redis-server");
        cli = binary("redis-cli");
        String openssl = security == Security.TLS ? binary("openssl") : "";
        if (server == null || cli == null || openssl == null) {
            String why = "RedisCluster: SKIPPING " + ctx.getDisplayName() + ": no "
                    + (server == null ? "redis-server" : cli == null ? "redis-cli" : "openssl")
                    + " binary on this machine (scripts/setup.sh installs Debian's redis-server, which brings"
                    + " redis-cli); the Redis Cluster tier is NOT tested here";
            System.err.println("*".repeat(100));
            System.err.println(why);
            System.err.println("*".repeat(100));
            Assumptions.abort(why);
        }
        image = RedisImage.tag();
        long t0 = System.nanoTime();
        dir = Files.createTempDirectory("kv-redis-cluster");
        if (security == Security.TLS) {
            certificates(openssl);
        }
        int[] ports = freePorts(12);
        for (int i = 0; i < 6; i++) {
            Node n = new Node(ports[2 * i], ports[2 * i + 1], Files.createDirectories(dir.resolve("node" + i)));
            Files.writeString(n.dir.resolve("redis.conf"), config(n));
            nodes.add(n);
        }
        for (Node n : nodes) {
            start(n);
        }
        for (Node n : nodes) {
            awaitAnswer(n);
        }
        List<String> create = new ArrayList<>(List.of("--cluster", "create"));
        for (Node n : nodes) {
            create.add("127.0.0.1:" + n.port);
        }
        create.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
        String out = cli(nodes.getFirst(), create.toArray(String[]::new));
        if (!out.contains("All 16384 slots covered")) {
            throw new IllegalStateException("redis-cli --cluster create failed: " + out);
        }
        awaitHealthy(30_000);
        System.err.printf("RedisCluster: %s, 3 masters + 3 replicas on %s, ready in %.1f s (%s)%n", security,
                nodes.stream().map(n -> String.valueOf(n.port)).collect(Collectors.joining(",")),
                (System.nanoTime() - t0) / 1e9, image != null ? RedisImage.how() + ", one container per node on the"
                        + " host's network" : RedisImage.how() + ": " + server);
    }

    private static String binary(String name) {
        for (String d : List.of("/usr/bin/", "/usr/local/bin/", "/usr/sbin/", "/bin/")) {
            if (Files.isExecutable(Path.of(d + name))) {
                return d + name;
            }
        }
        return null;
    }

    private static int[] freePorts(int n) throws IOException {
        // all open at once, so that no two are the same
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                out[i] = s.getLocalPort();
            }
            return out;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }

    private String config(Node n) {
        StringBuilder c = new StringBuilder();
        c.append("bind 127.0.0.1\n");
        c.append("dir ").append(n.dir).append('\n');
        c.append("cluster-enabled yes\ncluster-config-file nodes.conf\n");
        c.append("cluster-port ").append(n.busPort).append('\n');
        c.append("cluster-node-timeout ").append(NODE_TIMEOUT_MS).append('\n');
        // one shard away must not stop the others (the default stops the whole cluster), and a
        // replica is promoted however long its link was down
        c.append("cluster-require-full-coverage no\ncluster-replica-validity-factor 0\n");
        c.append("save \"\"\nappendonly no\nprotected-mode no\n");
        if (image != null) {
            // the file a plain process's output is redirected to
            c.append("logfile ").append(n.dir.resolve("redis.log")).append('\n');
        }
        switch (security) {
            case NONE -> c.append("port ").append(n.port).append('\n');
            case ACL -> {
                c.append("port ").append(n.port).append('\n');
                c.append("requirepass ").append(ADMIN_PASSWORD).append('\n');
                // the least the tier needs: its four commands, and what Lettuce sends to connect,
                // to read the topology and to read from replicas
                c.append("user ").append(USER).append(" on >").append(PASSWORD)
                        .append(" ~* resetchannels -@all +get +set +exists +del +ping +hello +auth +readonly"
                                + " +readwrite +info +cluster|nodes +cluster|slots +cluster|shards +cluster|myid"
                                + " +client|setname +client|id\n");
                c.append("user ").append(REPLICATION_USER).append(" on >").append(REPLICATION_PASSWORD)
                        .append(" -@all +psync +replconf +ping\n");
                c.append("masteruser ").append(REPLICATION_USER).append('\n');
                c.append("masterauth ").append(REPLICATION_PASSWORD).append('\n');
            }
            case TLS -> {
                c.append("port 0\ntls-port ").append(n.port).append('\n');
                c.append("tls-cert-file ").append(dir.resolve("server.crt")).append('\n');
                c.append("tls-key-file ").append(dir.resolve("server.key")).append('\n');
                c.append("tls-ca-cert-file ").append(dir.resolve("ca.crt")).append('\n');
                c.append("tls-cluster yes\ntls-replication yes\ntls-auth-clients yes\n");
            }
        }
        return c.toString();
    }

    /** A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, all signed by the CA. */
    private void certificates(String openssl) throws Exception {
        run(List.of(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=phoenix-test-ca"));
        Files.writeString(dir.resolve("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        for (String who : List.of("server", "client")) {
            run(List.of(openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", who + ".key", "-out", who + ".csr", "-subj", "/CN=" + (who.equals("server") ? "localhost" : "kv-client")));
            List<String> sign = new ArrayList<>(List.of(openssl, "x509", "-req", "-in", who + ".csr", "-CA", "ca.crt",
                    "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-out", who + ".crt"));
            if (who.equals("server")) {
                sign.addAll(List.of("-extfile", "server.ext"));
            }
            run(sign);
        }
        // a second CA that signed nothing here: a client trusting only it must refuse the servers
        run(List.of(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "other-ca.key", "-out", "other-ca.crt", "-days", "2", "-subj", "/CN=some-other-ca"));
    }

    private String run(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
        }
        return out;
    }

    private void start(Node n) throws IOException {
        if (image == null) {
            n.process = new ProcessBuilder(server, n.dir.resolve("redis.conf").toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(n.dir.resolve("redis.log").toFile())).start();
        } else if (n.container != null) {
            n.container.getDockerClient().startContainerCmd(n.container.getContainerId()).exec();
        } else {
            String user = Files.getAttribute(dir, "unix:uid") + ":" + Files.getAttribute(dir, "unix:gid");
            n.container = RedisImage.container(image)
                    .withNetworkMode("host")
                    .withCommand(n.dir.resolve("redis.conf").toString())
                    // the bind by hand: withFileSystemBind would first check file mounting with
                    // an alpine container, an image no registry serves here
                    .withCreateContainerCmdModifier(c -> c.withUser(user).getHostConfig()
                            .withBinds(new Bind(dir.toString(), new Volume(dir.toString()))))
                    // awaitAnswer waits (the image has no shell for Testcontainers' checks)
                    .waitingFor(new AbstractWaitStrategy() {
                        @Override
                        protected void waitUntilReady() {
                        }
                    });
            n.container.start();
        }
    }

    /** The node's log file, and a container's own output (where redis-server stopped before it opened the file). */
    private static String log(Node n) throws IOException {
        Path f = n.dir.resolve("redis.log");
        String log = Files.exists(f) ? Files.readString(f) : "(no " + f + ")";
        return n.container != null ? log + "\ncontainer output: " + n.container.getLogs() : log;
    }

    private static boolean alive(Node n) {
        if (n.container != null) {
            return Boolean.TRUE.equals(n.container.getDockerClient().inspectContainerCmd(n.container.getContainerId())
                    .exec().getState().getRunning());
        }
        return n.process != null && n.process.isAlive();
    }

    private void awaitAnswer(Node n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            if (cli(n, "ping").contains("PONG")) {
                return;
            }
            if (!alive(n) || System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server did not start on port " + n.port + ": " + log(n));
            }
            Thread.sleep(30);
        }
    }

    /** redis-cli against node {@code n}, as the administrator (the default user), over TLS where the servers speak only that. */
    String cli(Node n, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(cli, "-h", "127.0.0.1", "-p", String.valueOf(n.port)));
        if (security == Security.TLS) {
            cmd.addAll(List.of("--tls", "--cacert", dir.resolve("ca.crt").toString(), "--cert",
                    dir.resolve("client.crt").toString(), "--key", dir.resolve("client.key").toString()));
        }
        if (security == Security.ACL) {
            cmd.addAll(List.of("--no-auth-warning", "-a", ADMIN_PASSWORD));
        }
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(30, TimeUnit.SECONDS);
        return out;
    }

    /** A cluster node as {@code CLUSTER NODES} describes it. */
    record View(String id, int port, boolean master, boolean failed, String masterId, boolean hasSlots) {
    }

    List<View> view(Node from) throws Exception {
        List<View> out = new ArrayList<>();
        for (String line : cli(from, "cluster", "nodes").split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 8) {
                continue;
            }
            int port = Integer.parseInt(f[1].substring(f[1].lastIndexOf(':') + 1, f[1].indexOf('@')));
            out.add(new View(f[0], port, f[2].contains("master"), f[2].contains("fail") && !f[2].contains("fail?"),
                    f[3], f.length > 8));
        }
        return out;
    }

    /** Waits until every live node says cluster_state:ok, 3 masters hold slots, each with a replica whose link is up. */
    void awaitHealthy(long millis) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        String last = "";
        while (System.nanoTime() < deadline) {
            if (healthy()) {
                return;
            }
            last = live().isEmpty() ? "no node alive" : cli(live().getFirst(), "cluster", "nodes");
            Thread.sleep(100);
        }
        throw new IllegalStateException("the cluster did not become healthy in " + millis + " ms: " + last);
    }

    private boolean healthy() throws Exception {
        List<Node> live = live();
        for (Node n : live) {
            String info = cli(n, "cluster", "info");
            if (!info.contains("cluster_state:ok")) {
                return false;
            }
        }
        List<View> v = view(live.getFirst());
        long masters = v.stream().filter(x -> x.master() && x.hasSlots() && !x.failed()).count();
        long replicas = v.stream().filter(x -> !x.master() && !x.failed()).count();
        if (masters != 3 || replicas < live.size() - 3) {
            return false;
        }
        for (Node n : live) {
            String r = cli(n, "info", "replication");
            if (r.contains("role:slave") && !r.contains("master_link_status:up")) {
                return false;
            }
        }
        return true;
    }

    List<Node> live() {
        return nodes.stream().filter(RedisCluster::alive).toList();
    }

    List<Node> nodes() {
        return nodes;
    }

    Node node(int port) {
        return nodes.stream().filter(n -> n.port == port).findFirst().orElseThrow();
    }

    /** The master now serving {@code key}'s slot, as a live node sees the cluster. */
    Node masterOf(String key) throws Exception {
        return masterOfSlot(io.lettuce.core.cluster.SlotHash.getSlot(key));
    }

    /** The master now serving {@code slot}. */
    Node masterOfSlot(int slot) throws Exception {
        Node any = live().getFirst();
        for (String line : cli(any, "cluster", "nodes").split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 9 || !f[2].contains("master") || f[2].contains("fail")) {
                continue;
            }
            for (int i = 8; i < f.length; i++) {
                if (f[i].startsWith("[")) {
                    continue; // a slot being migrated
                }
                String[] r = f[i].split("-");
                int lo = Integer.parseInt(r[0]);
                int hi = r.length > 1 ? Integer.parseInt(r[1]) : lo;
                if (slot >= lo && slot <= hi) {
                    return node(Integer.parseInt(f[1].substring(f[1].lastIndexOf(':') + 1, f[1].indexOf('@'))));
                }
            }
        }
        throw new IllegalStateException("no master serves slot " + slot);
    }

    /** The masters now holding slots. */
    List<Node> masters() throws Exception {
        return view(live().getFirst()).stream().filter(v -> v.master() && v.hasSlots() && !v.failed())
                .map(v -> node(v.port())).toList();
    }

    /** The replica of master {@code m}. */
    Node replicaOf(Node m) throws Exception {
        List<View> v = view(live().getFirst());
        String id = v.stream().filter(x -> x.port() == m.port).findFirst().orElseThrow().id();
        return v.stream().filter(x -> !x.master() && x.masterId().equals(id)).map(x -> node(x.port())).findFirst()
                .orElseThrow(() -> new IllegalStateException("no replica of " + m.port));
    }

    /** SIGKILL: the process ends at once, no goodbye to the cluster or the clients. */
    void kill(Node n) throws InterruptedException {
        if (n.container != null) {
            n.container.getDockerClient().killContainerCmd(n.container.getContainerId()).exec();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (alive(n) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            return;
        }
        n.process.destroyForcibly();
        n.process.waitFor(10, TimeUnit.SECONDS);
    }

    void pause(Node n) throws Exception {
        if (n.container != null) {
            n.container.getDockerClient().pauseContainerCmd(n.container.getContainerId()).exec();
            return;
        }
        signal(n, "-STOP");
    }

    void resume(Node n) throws Exception {
        if (n.container != null) {
            n.container.getDockerClient().unpauseContainerCmd(n.container.getContainerId()).exec();
            return;
        }
        signal(n, "-CONT");
    }

    private void signal(Node n, String sig) throws Exception {
        Process p = new ProcessBuilder("kill", sig, String.valueOf(n.process.pid())).inheritIO().start();
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("kill " + sig + " " + n.process.pid() + " failed");
        }
    }

    /** Starts a killed node again from its directory: it rejoins the cluster (as a replica, once failed over). */
    void restart(Node n) throws Exception {
        start(n);
        awaitAnswer(n);
    }

    /** The seeds: every node, as LMCache's form lists them. */
    String url() {
        return (security == Security.TLS ? "rediss-cluster://" : "redis-cluster://")
                + nodes.stream().map(n -> "127.0.0.1:" + n.port).collect(Collectors.joining(","));
    }

    Path file(String name) {
        return dir.resolve(name);
    }

    /** {@code INFO commandstats}' call count of {@code command} on node {@code n}. */
    long calls(Node n, String command) throws Exception {
        for (String line : cli(n, "info", "commandstats").split("\n")) {
            if (line.startsWith("cmdstat_" + command + ":calls=")) {
                String v = line.substring(line.indexOf("calls=") + 6);
                return Long.parseLong(v.substring(0, v.indexOf(',')));
            }
        }
        return 0;
    }

    @Override
    public void afterAll(ExtensionContext ctx) throws Exception {
        for (Node n : nodes) {
            if (n.container != null) {
                try {
                    var state = n.container.getDockerClient().inspectContainerCmd(n.container.getContainerId()).exec()
                            .getState();
                    if (Boolean.TRUE.equals(state.getPaused())) {
                        n.container.getDockerClient().unpauseContainerCmd(n.container.getContainerId()).exec();
                    }
                } finally {
                    n.container.stop(); // and removed
                }
            }
            if (n.process != null) {
                n.process.destroyForcibly(); // SIGKILL ends a paused node too
            }
        }
        for (Node n : nodes) {
            if (n.process != null) {
                n.process.waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (dir != null) {
            try (var s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
