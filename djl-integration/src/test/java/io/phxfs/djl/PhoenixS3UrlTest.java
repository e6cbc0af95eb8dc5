package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import io.phxfs.safetensors.s3.S3Exception;
import io.phxfs.safetensors.s3.S3FileSystem;
import io.phxfs.safetensors.s3.S3FileSystemProvider;
import io.phxfs.safetensors.s3.S3ProxyServer;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code phoenix:s3://bucket/prefix/} model URLs against S3Proxy (a real S3 server): the
 * weights of tiny-gpt2 and tiny-gpt2-sharded read from the bucket are byte-identical to the
 * local directory's and give the same logits, through the environment's settings or a
 * {@code Path} of a file system of its own as the checkpoint argument; a missing key or bucket
 * fails naming the URL.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PhoenixS3UrlTest {
    private static final String BUCKET = "djl";
    private static S3ProxyServer s3;

    @BeforeAll
    static void upload() throws IOException {
        s3 = S3ProxyServer.shared();
        s3.createBucket(BUCKET);
        for (String f : new String[] {"tiny-gpt2", "tiny-gpt2-sharded"}) {
            s3.putTree(BUCKET, f + "/", TestFixtures.file(f));
        }
        System.setProperty("aws.endpointUrl", s3.endpoint().toString());
        System.setProperty("aws.accessKeyId", S3ProxyServer.ACCESS_KEY);
        System.setProperty("aws.secretAccessKey", S3ProxyServer.SECRET_KEY);
        System.setProperty("aws.region", "us-east-1");
    }

    @AfterAll
    static void clear() {
        for (String p : new String[] {"aws.endpointUrl", "aws.accessKeyId", "aws.secretAccessKey", "aws.region"}) {
            System.clearProperty(p);
        }
    }

    private static long[] ids() {
        return Gpt2ZooTest.ids();
    }

    private static void assertSame(Criteria<long[], float[][]> local, Criteria<long[], float[][]> remote, String what)
            throws Exception {
        try (ZooModel<long[], float[][]> a = local.loadModel(); ZooModel<long[], float[][]> b = remote.loadModel();
             Predictor<long[], float[][]> pa = a.newPredictor(); Predictor<long[], float[][]> pb = b.newPredictor()) {
            CausalLmBlock la = (CausalLmBlock) a.getBlock();
            CausalLmBlock lb = (CausalLmBlock) b.getBlock();
            assertTrue(S3FileSystemProvider.isS3(lb.weights().path()), what + ": " + lb.weights().path());
            Map<String, NDArray> wa = la.weights().arrays();
            Map<String, NDArray> wb = lb.weights().arrays();
            assertEquals(wa.keySet(), wb.keySet(), what);
            for (String n : wa.keySet()) {
                assertArrayEquals(wa.get(n).toByteArray(), wb.get(n).toByteArray(), what + " " + n);
            }
            float[][] x = pa.predict(ids());
            float[][] y = pb.predict(ids());
            for (int i = 0; i < x.length; i++) {
                assertArrayEquals(x[i], y[i], what + ": logits of position " + i);
            }
        }
    }

    @Test
    void singleAndShardedCheckpointsFromTheBucketEqualTheLocalOnes() throws Exception {
        for (String f : new String[] {"tiny-gpt2", "tiny-gpt2-sharded"}) {
            Criteria<long[], float[][]> local = Criteria.builder().setTypes(long[].class, float[][].class)
                    .optModelUrls("phoenix://" + TestFixtures.file(f)).build();
            for (String url : new String[] {"phoenix:s3://" + BUCKET + "/" + f + "/", "phoenix:s3://" + BUCKET + "/" + f}) {
                Criteria<long[], float[][]> remote = Criteria.builder().setTypes(long[].class, float[][].class)
                        .optModelUrls(url).build();
                assertSame(local, remote, url);
            }
        }
    }

    @Test
    void aPathOfAFileSystemOfItsOwnAsTheCheckpointArgument() throws Exception {
        try (S3FileSystem fs = S3FileSystem.open(s3.settings().build())) {
            Criteria<long[], float[][]> local = Criteria.builder().setTypes(long[].class, float[][].class)
                    .optModelUrls("phoenix://" + TestFixtures.file("tiny-gpt2")).build();
            Criteria<long[], float[][]> remote = Criteria.builder().setTypes(long[].class, float[][].class)
                    .optModelUrls("phoenix:s3://" + BUCKET + "/tiny-gpt2/")
                    .optArgument(PhoenixBlockFactory.CHECKPOINT, fs.path("s3://" + BUCKET + "/tiny-gpt2/")).build();
            assertSame(local, remote, "own file system");
        }
    }

    @Test
    void aMissingKeyOrBucketNamesTheUrl() {
        IOException key = assertThrows(IOException.class, () -> Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix:s3://" + BUCKET + "/no-such-model/").build().loadModel());
        assertTrue(key.getMessage().contains("s3://djl/no-such-model"), key.getMessage());
        S3Exception bucket = assertThrows(S3Exception.class, () -> Criteria.builder()
                .setTypes(long[].class, float[][].class).optModelUrls("phoenix:s3://no-such-bucket/m/").build().loadModel());
        assertTrue(bucket.getMessage().startsWith("s3://no-such-bucket"), bucket.getMessage());
        assertEquals(404, bucket.status());
    }
}
