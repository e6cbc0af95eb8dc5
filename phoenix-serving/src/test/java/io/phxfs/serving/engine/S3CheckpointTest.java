package io.phxfs.serving.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.safetensors.s3.S3Exception;
import io.phxfs.safetensors.s3.S3FileSystem;
import io.phxfs.safetensors.s3.S3FileSystemProvider;
import io.phxfs.safetensors.s3.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A checkpoint in S3 (tiny-chat-llama uploaded into S3Proxy, a real S3 server): DJL's
 * {@code phoenix:s3://} model URL loads the same weights and computes the same logits as the
 * local directory; the engine over the S3 path gives transformers' greedy tokens, with its
 * small files in a private copy deleted at close and an identity of its own objects; a missing
 * bucket or key, or a refused request, fails fast with an error naming the URL.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // an error must fail, not hang
class S3CheckpointTest {
    static final String BUCKET = "serving";
    static final String FIXTURE = "tiny-chat-llama";
    private static S3ProxyServer s3;
    private static S3FileSystem fs;

    @BeforeAll
    static void upload() throws IOException {
        s3 = S3ProxyServer.shared();
        s3.createBucket(BUCKET);
        s3.putTree(BUCKET, FIXTURE + "/", Fixtures.dir(FIXTURE));
        Path dir = Fixtures.dir(FIXTURE);
        // a checkpoint without its tokenizer
        for (String f : new String[] {"config.json", "model.safetensors"}) {
            s3.put(BUCKET, "no-tokenizer/" + f, dir.resolve(f));
        }
        fs = S3FileSystem.open(s3.settings().build());
        // phoenix:s3:// URLs use the environment's settings: the AWS SDK's system properties stand in for AWS_*
        System.setProperty("aws.endpointUrl", s3.endpoint().toString());
        System.setProperty("aws.accessKeyId", S3ProxyServer.ACCESS_KEY);
        System.setProperty("aws.secretAccessKey", S3ProxyServer.SECRET_KEY);
        System.setProperty("aws.region", "us-east-1");
    }

    @AfterAll
    static void close() {
        System.clearProperty("aws.endpointUrl");
        System.clearProperty("aws.accessKeyId");
        System.clearProperty("aws.secretAccessKey");
        System.clearProperty("aws.region");
        fs.close();
    }

    private static Path s3(String key) {
        return fs.path("s3://" + BUCKET + "/" + key);
    }

    private static Set<Path> copies() throws IOException {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return Set.copyOf(s.filter(p -> p.getFileName().toString().startsWith("phoenix-checkpoint-")).toList());
        }
    }

    private static long[] prompt() {
        int[] ids = Fixtures.ints(Fixtures.reference(FIXTURE).get("chats").get(0).get("ids"));
        long[] out = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = ids[i];
        }
        return out;
    }

    @Test
    void aPhoenixS3UrlLoadsByteIdenticalWeightsAndTheSameLogits() throws Exception {
        Criteria<long[], float[][]> local = Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix://" + Fixtures.dir(FIXTURE).toAbsolutePath()).build();
        Criteria<long[], float[][]> remote = Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix:s3://" + BUCKET + "/" + FIXTURE + "/").build();
        try (ZooModel<long[], float[][]> a = local.loadModel(); ZooModel<long[], float[][]> b = remote.loadModel();
             Predictor<long[], float[][]> pa = a.newPredictor(); Predictor<long[], float[][]> pb = b.newPredictor()) {
            CausalLmBlock la = (CausalLmBlock) a.getBlock();
            CausalLmBlock lb = (CausalLmBlock) b.getBlock();
            assertEquals(FIXTURE, b.getName());
            assertTrue(S3FileSystemProvider.isS3(lb.weights().path()), lb.weights().path().toString());
            assertEquals("s3://" + BUCKET + "/" + FIXTURE, lb.weights().loaded().model().directory().toString());
            assertFalse(lb.weights().loaded().hostMapped(), "an object is never mapped");
            Map<String, NDArray> wa = la.weights().arrays();
            Map<String, NDArray> wb = lb.weights().arrays();
            assertEquals(wa.keySet(), wb.keySet());
            for (String name : wa.keySet()) {
                assertEquals(wa.get(name).getDataType(), wb.get(name).getDataType(), name);
                assertEquals(wa.get(name).getShape(), wb.get(name).getShape(), name);
                assertArrayEquals(wa.get(name).toByteArray(), wb.get(name).toByteArray(), name);
            }
            float[][] x = pa.predict(prompt());
            float[][] y = pb.predict(prompt());
            assertEquals(x.length, y.length);
            for (int i = 0; i < x.length; i++) {
                assertArrayEquals(x[i], y[i], "logits of position " + i);
            }
            // DJL's PyTorch engine takes a local model directory: an empty private placeholder
            Path placeholder = b.getModelPath();
            assertEquals(Path.of(System.getProperty("java.io.tmpdir")).toRealPath(), placeholder.getParent().toRealPath());
            try (Stream<Path> s = Files.list(placeholder)) {
                assertEquals(0, s.count());
            }
        }
    }

    @Test
    void theEngineOverAnS3PathGivesTheGreedyTokensOfTheReference() throws Exception {
        JsonNode ref = Fixtures.reference(FIXTURE);
        int max = ref.get("max_new_tokens").intValue();
        List<JsonNode> cases = new ArrayList<>();
        ref.get("chats").forEach(c -> {
            if (c.has("ids")) {
                cases.add(c);
            }
        });
        ref.get("completions").forEach(cases::add);
        Set<Path> before = copies();
        String localIdentity;
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir(FIXTURE)))) {
            localIdentity = e.model().identity();
        }
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(s3(FIXTURE + "/")))) {
            Set<Path> during = new java.util.HashSet<>(copies());
            during.removeAll(before);
            assertEquals(1, during.size(), "one private copy of the small files: " + during);
            Path copy = during.iterator().next();
            assertEquals(Set.of(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                    java.nio.file.attribute.PosixFilePermission.OWNER_WRITE,
                    java.nio.file.attribute.PosixFilePermission.OWNER_EXECUTE), Files.getPosixFilePermissions(copy));
            assertFalse(Files.exists(copy.resolve("model.safetensors")), "the weights are never copied");
            assertTrue(Files.isRegularFile(copy.resolve("tokenizer.json")));
            assertTrue(Files.isRegularFile(copy.resolve("chat_template.jinja")));
            assertTrue(e.chatTemplate().isPresent(), "the checkpoint's own chat template");
            assertTrue(S3FileSystemProvider.isS3(e.model().dir()));
            assertNotEquals(localIdentity, e.model().identity(), "the identity of the S3 objects (their entity tags)");
            for (JsonNode c : cases) {
                Collector col = new Collector();
                e.submit(new GenerationRequest("s3-" + c.get("ids").size(), Fixtures.ints(c.get("ids")),
                        SamplingParams.greedy(max), null), col);
                Collector.Result r = col.await();
                assertArrayEquals(Fixtures.ints(c.get("generated")), r.tokens(), c.get("ids").size() + " tokens");
                assertEquals(c.get("generated_text").asText(), r.text());
            }
        }
        assertEquals(before, copies(), "the copy is deleted at close");
    }

    @Test
    void theIdentityIsOfTheObjectsAChangedCheckpointGetsAnother() throws Exception {
        Path dir = Fixtures.dir(FIXTURE);
        s3.putTree(BUCKET, "changing/", dir);
        String first;
        try (S3FileSystem a = S3FileSystem.open(s3.settings().build());
             CheckpointFiles f = CheckpointFiles.open(a.path("s3://" + BUCKET + "/changing/"))) {
            first = ModelIdentity.of(f.dir(), f.checkpoint());
            assertEquals(first, ModelIdentity.of(f.dir(), f.checkpoint()), "stable");
        }
        // one weight byte changed, far from any sample a local digest would take
        byte[] weights = Files.readAllBytes(dir.resolve("model.safetensors"));
        weights[weights.length - 5000] ^= 1;
        s3.put(BUCKET, "changing/model.safetensors", weights);
        try (S3FileSystem b = S3FileSystem.open(s3.settings().build());
             CheckpointFiles f = CheckpointFiles.open(b.path("s3://" + BUCKET + "/changing/"))) {
            assertNotEquals(first, ModelIdentity.of(f.dir(), f.checkpoint()));
        }
        // and a changed config.json
        s3.put(BUCKET, "changing/model.safetensors", dir.resolve("model.safetensors"));
        s3.put(BUCKET, "changing/config.json", (Files.readString(dir.resolve("config.json")) + "\n").getBytes());
        try (S3FileSystem c = S3FileSystem.open(s3.settings().build());
             CheckpointFiles f = CheckpointFiles.open(c.path("s3://" + BUCKET + "/changing/"))) {
            assertNotEquals(first, ModelIdentity.of(f.dir(), f.checkpoint()));
        }
    }

    @Test
    void aMissingBucketOrKeyOrARefusalFailsNamingTheUrl() throws Exception {
        Set<Path> before = copies();
        S3Exception bucket = assertThrows(S3Exception.class,
                () -> GenerationEngine.open(EngineConfig.of(fs.path("s3://no-such-bucket/model/"))));
        assertTrue(bucket.getMessage().startsWith("s3://no-such-bucket"), bucket.getMessage());
        assertTrue(bucket.getMessage().contains("NoSuchBucket"), bucket.getMessage());

        NoSuchFileException key = assertThrows(NoSuchFileException.class,
                () -> GenerationEngine.open(EngineConfig.of(s3("nothing-here/"))));
        assertTrue(key.getMessage().contains("s3://serving/nothing-here"), key.getMessage());

        IOException tokenizer = assertThrows(IOException.class,
                () -> GenerationEngine.open(EngineConfig.of(s3("no-tokenizer/"))));
        assertTrue(tokenizer.getMessage().contains("s3://serving/no-tokenizer/tokenizer.json"), tokenizer.getMessage());

        try (S3FileSystem bad = S3FileSystem.open(s3.settings()
                .credentials(S3ProxyServer.ACCESS_KEY, "not-" + S3ProxyServer.SECRET_KEY, null).build())) {
            S3Exception denied = assertThrows(S3Exception.class,
                    () -> GenerationEngine.open(EngineConfig.of(bad.path("s3://" + BUCKET + "/" + FIXTURE + "/"))));
            assertEquals(403, denied.status());
            assertTrue(denied.getMessage().startsWith("s3://serving/" + FIXTURE), denied.getMessage());
            assertFalse(denied.getMessage().contains(S3ProxyServer.SECRET_KEY));
        }

        IOException cap = assertThrows(IOException.class, () -> CheckpointFiles.open(s3(FIXTURE + "/"), 1000));
        assertTrue(cap.getMessage().matches("s3://serving/" + FIXTURE + "/[a-z_.]+: \\d+ bytes, over the 1000 bytes .*"),
                cap.getMessage());
        assertEquals(before, copies(), "no copy left behind by a failed open");
    }

    @Test
    void anUnreachableOrSilentEndpointFailsInsteadOfHanging() throws Exception {
        Set<Path> before = copies();
        int port = S3ProxyServer.freePort(); // nothing listens there
        try (S3FileSystem down = S3FileSystem.open(s3.settings().endpoint(java.net.URI.create("http://127.0.0.1:" + port))
                .maxAttempts(2).build())) {
            S3Exception e = assertThrows(S3Exception.class,
                    () -> GenerationEngine.open(EngineConfig.of(down.path("s3://" + BUCKET + "/" + FIXTURE + "/"))));
            assertTrue(e.getMessage().startsWith("s3://serving/" + FIXTURE), e.getMessage());
            assertTrue(e.getMessage().contains("cannot connect to http://127.0.0.1:" + port), e.getMessage());
        }
        // a server that takes the connection and never answers: the request times out
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
             S3FileSystem mute = S3FileSystem.open(s3.settings()
                     .endpoint(java.net.URI.create("http://127.0.0.1:" + silent.getLocalPort()))
                     .timeout(java.time.Duration.ofSeconds(1)).maxAttempts(2).build())) {
            long t0 = System.nanoTime();
            IOException e = assertThrows(IOException.class,
                    () -> GenerationEngine.open(EngineConfig.of(mute.path("s3://" + BUCKET + "/" + FIXTURE + "/"))));
            assertTrue(e.getMessage().startsWith("s3://serving/" + FIXTURE), e.getMessage());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(30), "failed within the timeouts");
        }
        assertEquals(before, copies(), "no copy left behind");
    }

    @Test
    void aPhoenixS3UrlOfNoCheckpointFailsNamingTheUrl() {
        IOException missing = assertThrows(IOException.class, () -> Criteria.builder()
                .setTypes(long[].class, float[][].class).optModelUrls("phoenix:s3://" + BUCKET + "/nothing-here/").build()
                .loadModel());
        assertTrue(missing.getMessage().contains("s3://serving/nothing-here"), missing.getMessage());
        IOException bucket = assertThrows(IOException.class, () -> Criteria.builder()
                .setTypes(long[].class, float[][].class).optModelUrls("phoenix:s3://no-such-bucket/m/").build()
                .loadModel());
        assertTrue(bucket.getMessage().startsWith("s3://no-such-bucket"), bucket.getMessage());
        assertTrue(bucket.getMessage().contains("NoSuchBucket"), bucket.getMessage());
        System.setProperty("aws.secretAccessKey", "not-" + S3ProxyServer.SECRET_KEY);
        try {
            S3Exception denied = assertThrows(S3Exception.class, () -> Criteria.builder()
                    .setTypes(long[].class, float[][].class).optModelUrls("phoenix:s3://" + BUCKET + "/" + FIXTURE + "/")
                    .build().loadModel());
            assertEquals(403, denied.status());
            assertTrue(denied.getMessage().startsWith("s3://serving/" + FIXTURE), denied.getMessage());
        } finally {
            System.setProperty("aws.secretAccessKey", S3ProxyServer.SECRET_KEY);
        }
        assertThrows(IllegalArgumentException.class, () -> Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix:s3://").build().loadModel());
    }
}
