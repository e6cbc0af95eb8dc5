package io.phxfs.safetensors.s3;

import io.phxfs.safetensors.TempDirs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;
import software.amazon.awssdk.utils.http.SdkHttpUtils;

/**
 * S3Proxy (a real S3 server: SigV4 authentication, ranged GETs, ListObjectsV2, S3's error
 * documents) serving a temporary directory through jclouds' filesystem-nio2 provider, run as a
 * child JVM on a free loopback port. One per test JVM ({@link #shared()}), stopped when the JVM
 * exits; objects are uploaded with signed PUTs, so that the server computes their ETags.
 *
 * <p>The jar is Maven's copy of {@code org.gaul:s3proxy:4.1.0:jar-with-dependencies}
 * ({@code -Dphx.s3proxy.jar}, set by the poms), else the local repository's.
 */
public final class S3ProxyServer implements AutoCloseable {
    public static final String ACCESS_KEY = "AKIAPHOENIXTEST0001";
    public static final String SECRET_KEY = "phoenix-test-secret-do-not-log-7f3a9c";

    private static S3ProxyServer shared;

    private final Path dir;
    private final Process process;
    private final int port;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private S3ProxyServer(Path dir, Process process, int port) {
        this.dir = dir;
        this.process = process;
        this.port = port;
    }

    /** The server of this test JVM, started on first use. */
    public static synchronized S3ProxyServer shared() {
        if (shared == null) {
            try {
                shared = start();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            S3ProxyServer s = shared;
            Runtime.getRuntime().addShutdownHook(new Thread(s::close));
        }
        return shared;
    }

    public static Path jar() {
        List<Path> tried = new ArrayList<>();
        String prop = System.getProperty("phx.s3proxy.jar");
        if (prop != null && !prop.isBlank()) {
            tried.add(Path.of(prop));
        }
        tried.add(Path.of("target/s3proxy/s3proxy.jar"));
        tried.add(Path.of("../safetensors-loader/target/s3proxy/s3proxy.jar"));
        tried.add(Path.of(System.getProperty("user.home"), ".m2/repository/org/gaul/s3proxy/4.1.0/s3proxy-4.1.0-jar-with-dependencies.jar"));
        for (Path p : tried) {
            if (Files.isRegularFile(p)) {
                return p.toAbsolutePath();
            }
        }
        throw new IllegalStateException("S3Proxy's jar not found (tried " + tried + "): mvn -pl safetensors-loader"
                + " process-test-classes copies org.gaul:s3proxy:4.1.0:jar-with-dependencies into target/s3proxy");
    }

    private static S3ProxyServer start() throws IOException {
        Path dir = Files.createTempDirectory("phx-s3proxy");
        Path data = Files.createDirectories(dir.resolve("data"));
        int port = freePort();
        Path conf = dir.resolve("s3proxy.conf");
        Files.writeString(conf, String.join("\n",
                "s3proxy.endpoint=http://127.0.0.1:" + port,
                "s3proxy.authorization=aws-v4",
                "s3proxy.identity=" + ACCESS_KEY,
                "s3proxy.credential=" + SECRET_KEY,
                "jclouds.provider=filesystem-nio2",
                "jclouds.filesystem.basedir=" + data,
                ""));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-DLOG_LEVEL=warn", "-jar", jar().toString(), "--properties", conf.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("s3proxy.log").toFile());
        Process p = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                break;
            } catch (IOException notYet) {
                if (!p.isAlive() || System.nanoTime() > deadline) {
                    p.destroyForcibly();
                    throw new IOException("S3Proxy did not start on port " + port + ": "
                            + Files.readString(dir.resolve("s3proxy.log")));
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    p.destroyForcibly();
                    throw new IOException("interrupted", e);
                }
            }
        }
        return new S3ProxyServer(dir, p, port);
    }

    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    public int port() {
        return port;
    }

    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    /** Settings for this server: its endpoint and keys, quick retries for the tests. */
    public S3Settings.Builder settings() {
        return S3Settings.builder().endpoint(endpoint()).region("us-east-1").credentials(ACCESS_KEY, SECRET_KEY, null)
                .backoff(Duration.ofMillis(5), Duration.ofMillis(50)).timeout(Duration.ofSeconds(10));
    }

    public void createBucket(String bucket) throws IOException {
        int s = send("PUT", bucket, null, HttpRequest.BodyPublishers.noBody()).statusCode();
        if (s != 200 && s != 409) {
            throw new IOException("create bucket " + bucket + ": HTTP " + s);
        }
    }

    public void put(String bucket, String key, Path file) throws IOException {
        HttpResponse<String> r = send("PUT", bucket, key, HttpRequest.BodyPublishers.ofFile(file));
        if (r.statusCode() != 200) {
            throw new IOException("put s3://" + bucket + "/" + key + ": HTTP " + r.statusCode() + " " + r.body());
        }
    }

    public void put(String bucket, String key, byte[] bytes) throws IOException {
        HttpResponse<String> r = send("PUT", bucket, key, HttpRequest.BodyPublishers.ofByteArray(bytes));
        if (r.statusCode() != 200) {
            throw new IOException("put s3://" + bucket + "/" + key + ": HTTP " + r.statusCode() + " " + r.body());
        }
    }

    /** Uploads every file under {@code local} as {@code prefix + relative path}. */
    public void putTree(String bucket, String prefix, Path local) throws IOException {
        try (var files = Files.walk(local)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                put(bucket, prefix + local.relativize(f).toString().replace('\\', '/'), f);
            }
        }
    }

    private HttpResponse<String> send(String method, String bucket, String key, HttpRequest.BodyPublisher body)
            throws IOException {
        SdkHttpRequest req = SdkHttpRequest.builder().method(SdkHttpMethod.fromValue(method)).protocol("http")
                .host("127.0.0.1").port(port)
                .encodedPath("/" + bucket + (key == null ? "" : "/" + SdkHttpUtils.urlEncodeIgnoreSlashes(key)))
                .putHeader("x-amz-content-sha256", "UNSIGNED-PAYLOAD").build();
        SdkHttpRequest signed = AwsV4HttpSigner.create().sign(r -> r
                .identity(AwsCredentialsIdentity.create(ACCESS_KEY, SECRET_KEY)).request(req)
                .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "s3")
                .putProperty(AwsV4HttpSigner.REGION_NAME, "us-east-1")
                .putProperty(AwsV4HttpSigner.DOUBLE_URL_ENCODE, false)
                .putProperty(AwsV4HttpSigner.NORMALIZE_PATH, false)
                .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, false)).request();
        HttpRequest.Builder b = HttpRequest.newBuilder(signed.getUri()).method(method, body);
        signed.forEachHeader((n, vs) -> {
            if (!n.equalsIgnoreCase("Host")) {
                vs.forEach(v -> b.header(n, v));
            }
        });
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    /** The server's log, for a failing test's message. */
    public String log() throws IOException {
        return Files.readString(dir.resolve("s3proxy.log"));
    }

    @Override
    public synchronized void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
            TempDirs.delete(dir);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            // a temporary directory left behind
        }
        http.close();
    }
}
