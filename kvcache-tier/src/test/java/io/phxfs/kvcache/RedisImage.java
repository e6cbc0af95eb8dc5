package io.phxfs.kvcache;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Image;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.images.builder.ImageFromDockerfile;
import org.testcontainers.utility.DockerImageName;

/**
 * How the tests' Redis servers run, decided once per JVM: in containers of a locally built image,
 * through Testcontainers, where a Docker engine answers; otherwise as Debian's plain
 * {@code redis-server}, with the reason said on stderr.
 *
 * <p>No image registry is reachable here, so the image is built {@code FROM scratch} out of this
 * machine's own {@code redis-server} and the libraries {@code ldd} names for it, tagged
 * {@code phoenix-test/redis:<hash of those files>}: a second JVM (or run) finds it and builds
 * nothing. Ryuk's image cannot be pulled either: the pom sets {@code TESTCONTAINERS_RYUK_DISABLED},
 * Testcontainers removes its containers at JVM exit, and containers a killed JVM left behind
 * (labelled with its pid) are removed here. The pom also sets {@code TESTCONTAINERS_HOST_OVERRIDE}:
 * on a machine with {@code /.dockerenv} Testcontainers would otherwise run {@code alpine} to find
 * the engine's address; and nothing here may use {@code withFileSystemBind} (it checks file
 * mounting with {@code alpine} too): binds go in through the create command. {@code
 * -Dphx.redis.debug=true} prints the stack trace of a fallback's cause.
 *
 * <p>{@code PHX_REDIS_DOCKER}: {@code auto} (the default) as above; {@code off}: the plain
 * fallback always; {@code require}: no fallback, a missing engine or a failed image build fails
 * the tests (scripts/test-all.sh sets it once it has an engine, so that CI cannot slip back to the
 * fallback unseen).
 */
final class RedisImage {
    static final String REPOSITORY = "phoenix-test/redis";
    /** Each container's label: the pid of the JVM that made it. */
    static final String PID_LABEL = "io.phxfs.kvcache.test-pid";

    private static final String MODE = System.getenv().getOrDefault("PHX_REDIS_DOCKER", "auto");
    private static String tag;
    private static String fallbackReason;

    private RedisImage() {
    }

    /** The image's tag where the servers run in containers, or null for the plain fallback (see {@link #fallbackReason}). */
    static synchronized String tag() {
        if (tag == null && fallbackReason == null) {
            long t0 = System.nanoTime();
            try {
                tag = decide();
            } catch (Throwable t) {
                if (Boolean.getBoolean("phx.redis.debug")) {
                    t.printStackTrace();
                }
                fallbackReason = t.getMessage() == null ? t.toString() : t.getMessage();
                if (MODE.equals("require")) {
                    throw new IllegalStateException("PHX_REDIS_DOCKER=require, but " + fallbackReason, t);
                }
            }
            if (tag != null) {
                System.err.printf("RedisImage: Testcontainers, image %s (ready in %.1f s)%n", tag, (System.nanoTime() - t0) / 1e9);
            } else {
                System.err.println("RedisImage: no Docker engine: plain redis-server fallback (" + fallbackReason + ")");
            }
        }
        if (tag == null && MODE.equals("require")) {
            throw new IllegalStateException("PHX_REDIS_DOCKER=require, but " + fallbackReason);
        }
        return tag;
    }

    static synchronized String fallbackReason() {
        return fallbackReason;
    }

    /** How the servers run, for the tests' output. */
    static String how() {
        String t = tag();
        return t != null ? "Testcontainers image " + t
                : "no Docker engine: plain redis-server fallback (" + fallbackReason + ")";
    }

    static DockerClient client() {
        return DockerClientFactory.instance().client();
    }

    /** The labels every container of these tests carries. */
    static Map<String, String> labels() {
        return Map.of(PID_LABEL, String.valueOf(ProcessHandle.current().pid()));
    }

    /** A container of {@code image}, labelled. */
    static GenericContainer<?> container(String image) {
        return new GenericContainer<>(DockerImageName.parse(image)).withLabels(labels());
    }

    private static String decide() throws Exception {
        if (MODE.equals("off")) {
            throw new IllegalStateException("PHX_REDIS_DOCKER=off");
        }
        if (!MODE.equals("auto") && !MODE.equals("require")) {
            throw new IllegalStateException("PHX_REDIS_DOCKER=" + MODE + " is none of auto, off, require");
        }
        String host = System.getenv("DOCKER_HOST");
        if ((host == null || host.isEmpty()) && !Files.exists(Path.of("/var/run/docker.sock"))) {
            throw new IllegalStateException("no DOCKER_HOST and no /var/run/docker.sock (scripts/docker-engine.sh starts one)");
        }
        if (host != null && !host.isEmpty() && !host.startsWith("unix://")) {
            // the cluster's nodes run on the host's network, reached on 127.0.0.1
            throw new IllegalStateException("DOCKER_HOST=" + host + " is not a local engine");
        }
        if (!"true".equalsIgnoreCase(System.getenv("TESTCONTAINERS_RYUK_DISABLED"))) {
            throw new IllegalStateException("TESTCONTAINERS_RYUK_DISABLED is not true (the pom sets it): Ryuk's image"
                    + " cannot be pulled here");
        }
        if (System.getenv("TESTCONTAINERS_HOST_OVERRIDE") == null && Files.exists(Path.of("/.dockerenv"))) {
            throw new IllegalStateException("TESTCONTAINERS_HOST_OVERRIDE is not set (the pom sets it) and /.dockerenv"
                    + " exists: Testcontainers would pull alpine to find the engine's address");
        }
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            throw new IllegalStateException("Testcontainers finds no Docker engine that answers");
        }
        DockerClient client = client();
        removeLeftovers(client);
        return image(client);
    }

    /** Containers of JVMs that are gone (killed before Testcontainers' exit hook ran). */
    private static void removeLeftovers(DockerClient client) {
        List<Container> all = client.listContainersCmd().withShowAll(true).withLabelFilter(List.of(PID_LABEL)).exec();
        for (Container c : all) {
            long pid = Long.parseLong(c.getLabels().get(PID_LABEL));
            if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                continue;
            }
            System.err.println("RedisImage: removing container " + c.getId().substring(0, 12) + " " + List.of(c.getNames())
                    + " left by JVM " + pid + ", which is gone");
            try {
                client.removeContainerCmd(c.getId()).withForce(true).withRemoveVolumes(true).exec();
            } catch (RuntimeException e) {
                System.err.println("RedisImage: could not remove it: " + e.getMessage());
            }
        }
    }

    /** The image, built from this machine's redis-server unless a build of the same files exists. */
    private static String image(DockerClient client) throws Exception {
        Path server = Path.of("/usr/bin/redis-server");
        if (!Files.isExecutable(server)) {
            throw new IllegalStateException("no /usr/bin/redis-server to build the image from (scripts/setup.sh installs it)");
        }
        // in the image's path -> the file on this machine (symbolic links followed: Debian's
        // redis-server is a link to redis-check-rdb, and redis picks its mode by argv[0])
        Map<String, Path> files = new java.util.TreeMap<>();
        files.put("usr/bin/redis-server", server.toRealPath());
        for (String lib : libraries(server)) {
            files.put(lib.substring(1), Path.of(lib).toRealPath());
        }
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        for (Map.Entry<String, Path> f : files.entrySet()) {
            md.update(f.getKey().getBytes(StandardCharsets.UTF_8));
            md.update((byte) 0);
            try (InputStream in = Files.newInputStream(f.getValue())) {
                byte[] b = new byte[1 << 16];
                for (int r; (r = in.read(b)) > 0; ) {
                    md.update(b, 0, r);
                }
            }
        }
        String dockerfile = "FROM scratch\nCOPY rootfs/ /\nWORKDIR /data\nENTRYPOINT [\"/usr/bin/redis-server\"]\n";
        md.update(dockerfile.getBytes(StandardCharsets.UTF_8));
        String tag = REPOSITORY + ":" + HexFormat.of().formatHex(md.digest()).substring(0, 16);
        try {
            client.inspectImageCmd(tag).exec();
            System.err.println("RedisImage: " + tag + " was built before: reused");
            return tag;
        } catch (NotFoundException e) {
            // build it
        }
        long t0 = System.nanoTime();
        ImageFromDockerfile build = new ImageFromDockerfile(tag, false).withFileFromString("Dockerfile", dockerfile);
        for (Map.Entry<String, Path> f : files.entrySet()) {
            build.withFileFromPath("rootfs/" + f.getKey(), f.getValue());
        }
        build.get(5, TimeUnit.MINUTES);
        System.err.printf("RedisImage: built %s FROM scratch in %.1f s: %s%n", tag, (System.nanoTime() - t0) / 1e9,
                String.join(" ", files.keySet().stream().map(k -> "/" + k).toList()));
        // earlier builds (of another redis-server) are not needed any more
        for (Image i : client.listImagesCmd().withReferenceFilter(REPOSITORY).exec()) {
            if (i.getRepoTags() != null && !List.of(i.getRepoTags()).contains(tag)) {
                try {
                    client.removeImageCmd(i.getId()).exec();
                } catch (RuntimeException e) {
                    // in use, or removed meanwhile
                }
            }
        }
        return tag;
    }

    private static final Pattern LDD = Pattern.compile("(?:=>\\s*)?(/\\S+)\\s+\\(0x");

    /** The shared libraries {@code ldd} names for {@code binary}, the loader included. */
    private static Set<String> libraries(Path binary) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("ldd", binary.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("ldd " + binary + " failed: " + out);
        }
        Set<String> libs = new LinkedHashSet<>();
        for (String line : out.split("\n")) {
            Matcher m = LDD.matcher(line);
            if (m.find()) {
                libs.add(m.group(1));
            } else if (line.contains("not found")) {
                throw new IllegalStateException("ldd " + binary + ": " + line.trim());
            }
        }
        if (libs.stream().noneMatch(l -> l.contains("ld-linux"))) {
            throw new IllegalStateException("ldd " + binary + " names no loader: " + out);
        }
        return libs;
    }
}
