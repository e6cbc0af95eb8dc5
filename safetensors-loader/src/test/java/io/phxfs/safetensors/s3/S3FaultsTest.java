package io.phxfs.safetensors.s3;

import io.phxfs.core.Device;
import io.phxfs.core.HostMemoryPool;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.TensorAllocator;
import io.phxfs.safetensors.TensorDestination;
import io.phxfs.safetensors.WeightLoader;
import io.phxfs.safetensors.s3.FaultProxy.Fault;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Faults between the loader and a real S3 server: connections reset mid-body, bodies cut
 * short, 503 SlowDown. A few of each are retried (resuming after the last byte that arrived)
 * and the load is byte-exact; faults that never stop fail the load after the bounded tries,
 * naming the URL, with every buffer of the load freed.
 */
@Tag("io")
class S3FaultsTest {
    private static FaultProxy proxy;
    private static S3FileSystem fs;
    private static final String LLAMA = "s3://fixtures/fx/tiny-llama/";
    private static final String SHARDED = "s3://fixtures/fx/tiny-gpt2-sharded/";

    @BeforeAll
    static void start() throws IOException {
        S3ProxyServer s3 = S3ProxyServer.shared();
        s3.createBucket(S3LoadTest.BUCKET);
        s3.putTree(S3LoadTest.BUCKET, S3LoadTest.PREFIX, Fixtures.dir());
        proxy = new FaultProxy(s3.port());
        // small ranges: a tensor is several GETs, and a fault hits the middle of a model
        fs = S3FileSystem.open(s3.settings().endpoint(proxy.endpoint()).rangeBytes(64 << 10).concurrency(4)
                .maxAttempts(4).backoff(Duration.ofMillis(2), Duration.ofMillis(20)).build());
    }

    @AfterAll
    static void stop() throws IOException {
        fs.close();
        proxy.close();
    }

    @BeforeEach
    void clean() {
        proxy.reset();
    }

    /** Data GETs only: the header GETs (from byte 0) are left alone unless a test says otherwise. */
    private static boolean dataRange(String target) {
        return !target.contains("list-type");
    }

    @ParameterizedTest
    @EnumSource(S3LoadTest.Target.class)
    void resetsMidBodyAreRetriedByteExact(S3LoadTest.Target target) throws IOException {
        proxy.only(S3FaultsTest::dataRange).next(Fault.RESET_MID_BODY, Fault.RESET_MID_BODY, Fault.RESET_MID_BODY);
        try (LoadedModel m = S3LoadTest.loader(target).load(fs.path(LLAMA))) {
            S3LoadTest.assertMatchesReference(m, "tiny-llama/model.safetensors");
        }
        assertEquals(3, proxy.injected());
    }

    @ParameterizedTest
    @EnumSource(S3LoadTest.Target.class)
    void shortBodiesAreRetriedByteExact(S3LoadTest.Target target) throws IOException {
        proxy.only(S3FaultsTest::dataRange).next(Fault.SHORT_BODY, Fault.SHORT_BODY, Fault.SHORT_BODY);
        try (LoadedModel m = S3LoadTest.loader(target).load(fs.path(SHARDED))) {
            S3LoadTest.assertMatchesReference(m, shards());
        }
        assertEquals(3, proxy.injected());
    }

    @ParameterizedTest
    @EnumSource(S3LoadTest.Target.class)
    void slowDownIsRetriedByteExact(S3LoadTest.Target target) throws IOException {
        // three in a row for one GET (within its four tries), more for the others
        proxy.only(S3FaultsTest::dataRange).next(Fault.SLOW_DOWN, Fault.SLOW_DOWN, Fault.SLOW_DOWN, Fault.SLOW_DOWN,
                Fault.SLOW_DOWN);
        try (LoadedModel m = S3LoadTest.loader(target).load(fs.path(LLAMA))) {
            S3LoadTest.assertMatchesReference(m, "tiny-llama/model.safetensors");
        }
        assertEquals(5, proxy.injected());
    }

    @Test
    void everyFaultKindInOneLoadIncludingTheHeaderGets() throws IOException {
        proxy.next(Fault.SLOW_DOWN, Fault.RESET_MID_BODY, Fault.SHORT_BODY, Fault.SLOW_DOWN, Fault.RESET_MID_BODY,
                Fault.SHORT_BODY);
        // nothing cached: the header GETs meet faults too, the index's first (it alone may take all six)
        try (S3FileSystem fresh = S3FileSystem.open(fs.settings().toBuilder().maxAttempts(8).build());
             LoadedModel m = WeightLoader.builder().toHost().build().load(fresh.path(SHARDED))) {
            S3LoadTest.assertMatchesReference(m, shards());
        }
        assertEquals(6, proxy.injected());
    }

    @Test
    void resetsThatNeverStopFailNamingTheUrlAndFreeTheHostBuffer() throws IOException {
        // headers first, cleanly (this file system keeps them), then every GET of the object resets
        io.phxfs.safetensors.ModelFiles model = io.phxfs.safetensors.ModelFiles.open(fs.path(LLAMA));
        proxy.only(t -> t.contains("tiny-llama/model.safetensors")).always(Fault.RESET_MID_BODY);
        try (HostMemoryPool pool = Phoenix.open().host().pool(Long.MAX_VALUE)) {
            WeightLoader loader = WeightLoader.builder().toHost().hostMemory(pool).build();
            UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> loader.load(model).close());
            String msg = e.getMessage();
            assertTrue(msg.contains("s3://fixtures/fx/tiny-llama/model.safetensors"), msg);
            assertTrue(msg.contains("failed 4 tries"), msg);
            assertTrue(proxy.injected() >= 4, "tried again: " + proxy.injected());
            // the load's host buffer went back to the pool: it was closed
            assertEquals(1, pool.newMappings(), pool.toString());
            assertTrue(pool.keptBytes() > 0, pool.toString());
        }
    }

    @Test
    void dataResetsThatNeverStopFreeEveryDeviceBuffer() throws IOException {
        Device d = Phoenix.open().device(0);
        List<RegisteredBuffer> handedOut = new ArrayList<>();
        TensorAllocator alloc = t -> {
            RegisteredBuffer b = d.allocate(t.nbytes());
            handedOut.add(b);
            return TensorDestination.owned(b);
        };
        // headers first, cleanly (cached by this file system), then every data GET resets
        io.phxfs.safetensors.ModelFiles model = io.phxfs.safetensors.ModelFiles.open(fs.path(LLAMA));
        proxy.only(S3FaultsTest::dataRange).always(Fault.RESET_MID_BODY);
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> WeightLoader.builder().into(alloc).build().load(model).close());
        assertTrue(e.getMessage().contains("s3://fixtures/fx/tiny-llama/model.safetensors"), e.getMessage());
        assertTrue(e.getCause() instanceof S3Exception s && s.retryable(), String.valueOf(e.getCause()));
        assertFalse(handedOut.isEmpty());
        for (RegisteredBuffer b : handedOut) {
            assertTrue(b.isClosed(), "every destination of the failed load is freed: " + b);
        }
    }

    @Test
    void slowDownThatNeverStopsFailsWithTheStatusAndCode() throws IOException {
        io.phxfs.safetensors.ModelFiles model = io.phxfs.safetensors.ModelFiles.open(fs.path(LLAMA));
        proxy.only(S3FaultsTest::dataRange).always(Fault.SLOW_DOWN);
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> WeightLoader.builder().toHost().build().load(model).close());
        String msg = e.getMessage();
        assertTrue(msg.contains("s3://fixtures/fx/tiny-llama/model.safetensors"), msg);
        assertTrue(msg.contains("HTTP 503 SlowDown"), msg);
        assertTrue(msg.contains("failed 4 tries"), msg);
        assertFalse(msg.contains(S3ProxyServer.SECRET_KEY), msg);
    }

    static String[] shards() {
        return Fixtures.reference().keySet().stream().filter(f -> f.startsWith("tiny-gpt2-sharded/")).toArray(String[]::new);
    }
}
