package io.phxfs.serving.engine;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Debian's redis-server (scripts/setup.sh installs it) on a free loopback port, stopped and started at will. */
final class LocalRedis implements AutoCloseable {
    private final int port;
    private final Path dir;
    private Process process;

    LocalRedis(Path dir) throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        this.dir = dir;
    }

    static String binary() {
        for (String p : List.of("/usr/bin/redis-server", "/usr/local/bin/redis-server")) {
            if (Files.isExecutable(Path.of(p))) {
                return p;
            }
        }
        throw new IllegalStateException("no redis-server: run scripts/setup.sh (it installs Debian's redis-server)");
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    void start() throws Exception {
        process = new ProcessBuilder(binary(), "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", dir.toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException e) {
                Thread.sleep(50);
            }
        }
        throw new IllegalStateException("redis-server did not start on " + port + ": " + Files.readString(dir.resolve("redis.log")));
    }

    void stop() throws Exception {
        if (process != null) {
            process.destroy();
            process.waitFor(20, TimeUnit.SECONDS);
            process = null;
        }
    }

    @Override
    public void close() throws Exception {
        stop();
    }
}
