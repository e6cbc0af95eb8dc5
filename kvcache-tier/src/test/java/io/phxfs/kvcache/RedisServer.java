package io.phxfs.kvcache;

import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;

/**
 * A real Redis for a test class: a container of {@link RedisImage}'s image (this machine's
 * {@code redis-server}, built {@code FROM scratch}) through Testcontainers where a Docker engine
 * answers, its port published on a free loopback port; otherwise Debian's {@code redis-server}
 * (scripts/setup.sh installs it) on a free loopback port with a temporary directory, and the
 * output says why. Injected as a parameter; {@link #stop()} and {@link #start()} take the server
 * away and bring it back on the same address.
 */
public final class RedisServer implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private GenericContainer<?> container;
    private Process process;
    private Path dir;
    private int port;
    private String how;

    @Override
    public void beforeAll(ExtensionContext ctx) throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        String image = RedisImage.tag();
        if (image != null) {
            // a fixed host port, so that the container stopped and started again keeps its address
            container = RedisImage.container(image)
                    .withCommand("--port", "6379", "--bind", "0.0.0.0", "--dir", "/data", "--save", "", "--appendonly",
                            "no", "--protected-mode", "no")
                    .withExposedPorts(6379)
                    .withCreateContainerCmdModifier(c -> c.getHostConfig().withPortBindings(
                            new PortBinding(Ports.Binding.bindIpAndPort("127.0.0.1", port), ExposedPort.tcp(6379))))
                    // the image has no shell for Testcontainers' port check
                    .waitingFor(Wait.forLogMessage(".*Ready to accept connections.*\\n", 1)
                            .withStartupTimeout(Duration.ofSeconds(60)));
            container.start();
            how = RedisImage.how() + ", container " + container.getContainerId().substring(0, 12) + ", 127.0.0.1:" + port
                    + " -> 6379";
            awaitPong();
        } else {
            String bin = redisServerBinary();
            dir = Files.createTempDirectory("kv-redis");
            how = RedisImage.how() + ": " + bin + " on 127.0.0.1:" + port;
            start();
        }
        System.err.println("RedisServer: " + how);
    }

    private static String redisServerBinary() {
        for (String p : List.of("/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server")) {
            if (Files.isExecutable(Path.of(p))) {
                return p;
            }
        }
        throw new IllegalStateException("no Docker engine and no redis-server binary: run scripts/setup.sh "
                + "(it installs Debian's redis-server)");
    }

    /** The server's URL. */
    String url() {
        return "redis://127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    /** Takes the server away: the process ends, or the container stops (data gone either way). */
    void stop() throws Exception {
        if (container != null) {
            container.getDockerClient().stopContainerCmd(container.getContainerId()).withTimeout(10).exec();
            return;
        }
        if (process != null) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
            process = null;
        }
    }

    /** Brings the server back on the same address and waits until it answers. */
    void start() throws Exception {
        if (container != null) {
            container.getDockerClient().startContainerCmd(container.getContainerId()).exec();
        } else {
            process = new ProcessBuilder(redisServerBinary(), "--port", String.valueOf(port), "--bind", "127.0.0.1",
                    "--dir", dir.toString(), "--save", "", "--appendonly", "no", "--protected-mode", "no")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
        }
        awaitPong();
    }

    private boolean alive() {
        if (container != null) {
            return Boolean.TRUE.equals(container.getDockerClient().inspectContainerCmd(container.getContainerId()).exec()
                    .getState().getRunning());
        }
        return process.isAlive();
    }

    private String log() throws IOException {
        return container != null ? container.getLogs() : Files.readString(dir.resolve("redis.log"));
    }

    private void awaitPong() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (true) {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
                s.getOutputStream().write("PING\r\n".getBytes());
                byte[] r = new byte[7];
                if (s.getInputStream().read(r) > 0 && new String(r).startsWith("+PONG")) {
                    return;
                }
            } catch (IOException e) {
                // not up yet
            }
            if (!alive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server did not start on port " + port + " (" + how + "): " + log());
            }
            Thread.sleep(20);
        }
    }

    @Override
    public void afterAll(ExtensionContext ctx) throws Exception {
        if (container != null) {
            container.stop();
        }
        if (process != null) {
            process.destroy();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        if (dir != null) {
            try (var s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
        return p.getParameter().getType() == RedisServer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) {
        return this;
    }
}
