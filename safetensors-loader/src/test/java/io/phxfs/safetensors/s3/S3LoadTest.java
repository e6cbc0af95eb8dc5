package io.phxfs.safetensors.s3;

import io.phxfs.core.Phoenix;
import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.TensorDigests;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every reference fixture, uploaded to S3Proxy, loaded from its s3:// URL into host memory and
 * into device 0 (the host connector here, the fake device in the fake-device execution: its
 * memory is reached only through pinned slots and copyToDevice), byte-exact against
 * reference.json; model directories (single file and sharded index) resolved as on a disk.
 */
@Tag("io")
class S3LoadTest {
    static final String BUCKET = "fixtures";
    static final String PREFIX = "fx/";
    private static S3FileSystem fs;

    enum Target {
        HOST, DEVICE
    }

    @BeforeAll
    static void upload() throws IOException {
        S3ProxyServer s3 = S3ProxyServer.shared();
        s3.createBucket(BUCKET);
        s3.putTree(BUCKET, PREFIX, Fixtures.dir());
        fs = S3FileSystem.open(s3.settings().build());
    }

    @AfterAll
    static void close() {
        fs.close();
        fs.close(); // a second close does nothing
    }

    static WeightLoader loader(Target t) {
        return (t == Target.HOST ? WeightLoader.builder().toHost() : WeightLoader.builder().toDevice(Phoenix.open().device(0)))
                .build();
    }

    static void assertMatchesReference(LoadedModel m, String... referenceFiles) {
        Map<String, String> sha = TensorDigests.sha256(m);
        TreeSet<String> expected = new TreeSet<>();
        for (String f : referenceFiles) {
            Fixtures.RefFile ref = Fixtures.reference().get(f);
            for (Map.Entry<String, Fixtures.RefTensor> t : ref.tensors().entrySet()) {
                expected.add(t.getKey());
                LoadedTensor lt = m.tensor(t.getKey()).orElseThrow(() -> new AssertionError(f + ": no " + t.getKey()));
                assertEquals(t.getValue().dtype(), lt.dtype(), t.getKey());
                assertArrayEquals(t.getValue().shape(), lt.shape(), t.getKey());
                assertEquals(t.getValue().sha256(), sha.get(t.getKey()), f + " " + t.getKey() + " sha256");
            }
        }
        assertEquals(expected, new TreeSet<>(m.tensors().keySet()));
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void everyFixtureFileByteExact(Target target) throws IOException {
        WeightLoader loader = loader(target);
        for (String f : Fixtures.reference().keySet()) {
            Path p = fs.path("s3://" + BUCKET + "/" + PREFIX + f);
            try (LoadedModel m = loader.load(p)) {
                assertMatchesReference(m, f);
                assertEquals(target == Target.DEVICE ? 0 : -1, m.buffers().firstKey());
                assertFalse(m.hostMapped(), "an object is never mapped");
                assertEquals(p, m.tensors().values().iterator().next().file());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void shardedIndexDirectoryByteExact(Target target) throws IOException {
        List<String> shards = new ArrayList<>();
        for (String f : Fixtures.reference().keySet()) {
            if (f.startsWith("tiny-gpt2-sharded/")) {
                shards.add(f);
            }
        }
        assertEquals(5, shards.size());
        for (String url : new String[] {"s3://fixtures/fx/tiny-gpt2-sharded/", "s3://fixtures/fx/tiny-gpt2-sharded",
                "s3://fixtures/fx/tiny-gpt2-sharded/model.safetensors.index.json"}) {
            try (LoadedModel m = loader(target).load(fs.path(url))) {
                assertEquals(5, m.fileCount(), url);
                assertMatchesReference(m, shards.toArray(String[]::new));
                assertEquals("s3://fixtures/fx/tiny-gpt2-sharded", m.model().directory().toString());
                assertEquals("model-00001-of-00005.safetensors",
                        m.model().relativeName(m.model().files().get(0).file()));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void singleFileDirectoryWithSmallRangesAndLowConcurrency(Target target) throws IOException {
        // ranges much smaller than the tensors: every tensor is several GETs landing side by side
        try (S3FileSystem small = S3FileSystem.open(S3ProxyServer.shared().settings().rangeBytes(64 << 10)
                .concurrency(3).headerPrefetchBytes(16).build());
             LoadedModel m = loader(target).load(small.path("s3://fixtures/fx/tiny-llama/"))) {
            assertMatchesReference(m, "tiny-llama/model.safetensors");
        }
    }

    @Test
    void selectionAndCopiesIntoCallerMemory() throws IOException {
        Path dir = fs.path("s3://fixtures/fx/tiny-gpt2/");
        ModelFiles model = ModelFiles.open(dir);
        String name = model.names().iterator().next();
        try (LoadedModel m = WeightLoader.builder().toHost().select(io.phxfs.safetensors.TensorSelector.names(List.of(name)))
                .build().load(dir)) {
            assertEquals(1, m.tensors().size());
            assertEquals(Fixtures.reference().get("tiny-gpt2/model.safetensors").tensors().get(name).sha256(),
                    TensorDigests.sha256(m).get(name));
        }
    }

    @Test
    void uriOfTheEnvironmentsEndpoint() throws IOException {
        // the AWS SDK's system properties stand in for AWS_ENDPOINT_URL and friends
        S3ProxyServer s3 = S3ProxyServer.shared();
        System.setProperty("aws.endpointUrl", s3.endpoint().toString());
        System.setProperty("aws.accessKeyId", S3ProxyServer.ACCESS_KEY);
        System.setProperty("aws.secretAccessKey", S3ProxyServer.SECRET_KEY);
        try (LoadedModel m = WeightLoader.builder().toHost().build().load(URI.create("s3://fixtures/fx/tiny-gpt2/"))) {
            assertMatchesReference(m, "tiny-gpt2/model.safetensors");
            assertTrue(Path.of(URI.create("s3://fixtures/fx/tiny-gpt2/")).getFileSystem() instanceof S3FileSystem);
            assertTrue(Files.isDirectory(Path.of(URI.create("s3://fixtures/fx/tiny-gpt2/"))));
        } finally {
            System.clearProperty("aws.endpointUrl");
            System.clearProperty("aws.accessKeyId");
            System.clearProperty("aws.secretAccessKey");
        }
    }
}
