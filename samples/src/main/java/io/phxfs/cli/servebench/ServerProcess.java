package io.phxfs.cli.servebench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code phoenix serve} in a JVM of its own, on the class path of this one, on a free port:
 * started, found ready by its {@code /health}, and stopped the way a user stops it (SIGTERM,
 * which drains and flushes the KV tier's write-behind).
 */
final class ServerProcess {
    private static final Pattern URL = Pattern.compile("(http://[0-9.:\\[\\]a-zA-Z-]+:\\d+)");
    private final Process process;
    private final String url;
    private boolean stopped;

    private ServerProcess(Process process, String url) {
        this.process = process;
        this.url = url;
    }

    String url() {
        return url;
    }

    static ServerProcess start(Path model, Path kvConfig, Integer device, int maxRunning, int maxWaiting, PrintWriter err,
                               boolean quiet) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), "io.phxfs.cli.PhoenixCli",
                "serve", model.toString(), "--port", "0", "--max-running", Integer.toString(maxRunning), "--max-waiting",
                Integer.toString(Math.max(maxWaiting, 1))));
        if (kvConfig != null) {
            cmd.addAll(List.of("--kv-config", kvConfig.toString()));
        }
        if (device != null) {
            cmd.addAll(List.of("--device", device.toString()));
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        CompletableFuture<String> found = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    Matcher m = URL.matcher(line);
                    if (!found.isDone() && m.find()) {
                        found.complete(m.group(1));
                    } else if (!quiet) {
                        synchronized (err) {
                            err.println("[serve] " + line);
                            err.flush();
                        }
                    }
                }
            } catch (IOException e) {
                found.completeExceptionally(e);
            }
            found.completeExceptionally(new IOException("phoenix serve exited (" + exitOf(p) + ") before it listened"));
        });
        String url;
        try {
            url = found.get(180, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            p.destroyForcibly();
            throw new IOException("phoenix serve did not start: " + (e.getCause() != null ? e.getCause().getMessage() : e), e);
        }
        ServerProcess s = new ServerProcess(p, url);
        s.awaitHealthy();
        return s;
    }

    private static String exitOf(Process p) {
        try {
            return p.waitFor(5, TimeUnit.SECONDS) ? "exit " + p.exitValue() : "still running";
        } catch (InterruptedException e) {
            return "interrupted";
        }
    }

    private void awaitHealthy() throws IOException, InterruptedException {
        HttpClient c = HttpClient.newHttpClient();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            try {
                HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(url + "/health")).timeout(Duration.ofSeconds(5))
                        .build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not yet
            }
            Thread.sleep(100);
        }
        throw new IOException(url + "/health did not answer 200 within 60 s");
    }

    /** SIGTERM, then waits for the drain; a server that does not end in a minute is killed. */
    void stop() throws InterruptedException, IOException {
        if (stopped) {
            return;
        }
        stopped = true;
        process.destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IOException("phoenix serve did not stop within 60 s of SIGTERM");
        }
        if (process.exitValue() != 0) {
            throw new IOException("phoenix serve exited " + process.exitValue() + " after SIGTERM (want 0: drained)");
        }
    }
}
