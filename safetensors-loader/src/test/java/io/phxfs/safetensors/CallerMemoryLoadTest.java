package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loading into memory the caller allocates (a map of buffers, an allocator callback) and
 * releasing single tensors, checked against the reference fixtures' SHA-256. Device 0 is the
 * host connector here and the fake device in the fake-device execution.
 */
@Tag("io")
class CallerMemoryLoadTest {
    private static final Phoenix PHX = Phoenix.open();
    private static final String LLAMA = "tiny-llama/model.safetensors";

    @TempDir
    Path dir;

    private static Map<String, Fixtures.RefTensor> reference() {
        return Fixtures.reference().get(LLAMA).tensors();
    }

    private static void assertMatchesReference(LoadedModel m) {
        Map<String, String> sha = TensorDigests.sha256(m);
        assertEquals(reference().keySet(), new TreeMap<>(sha).keySet());
        reference().forEach((n, r) -> assertEquals(r.sha256(), sha.get(n), n));
    }

    private static String sha256(MemorySegment s) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(s.asByteBuffer());
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void intoTheCallersBuffersByName() throws IOException {
        Map<String, RegisteredBuffer> mine = new LinkedHashMap<>();
        reference().forEach((n, r) -> mine.put(n, PHX.host().allocate(r.nbytes() + 3))); // room to spare is fine
        try {
            try (LoadedModel m = WeightLoader.builder().into(mine).build().load(Fixtures.file(LLAMA))) {
                assertMatchesReference(m);
                assertTrue(m.buffers().isEmpty(), "the loader allocated nothing of its own");
                LoadedTensor t = m.tensors().values().iterator().next();
                assertEquals(mine.get(t.name()).address(), t.address(), "read straight into the caller's memory");
            }
            // closing the model leaves the caller's buffers, and the bytes in them, alone
            reference().forEach((n, r) -> assertEquals(r.sha256(),
                    sha256(mine.get(n).segment().orElseThrow().asSlice(0, r.nbytes())), n));
        } finally {
            mine.values().forEach(RegisteredBuffer::close);
        }
    }

    @Test
    void anAllocatorPackingEveryTensorIntoOneCallerBuffer() throws IOException {
        long total = reference().values().stream().mapToLong(Fixtures.RefTensor::nbytes).sum();
        long[] next = {0};
        Device d = PHX.device(0);
        try (RegisteredBuffer arena = d.allocate(total)) {
            TensorAllocator packed = t -> {
                TensorDestination dest = TensorDestination.borrowed(arena, next[0]);
                next[0] += t.nbytes();
                return dest;
            };
            try (LoadedModel m = WeightLoader.builder().into(packed).build().load(Fixtures.file(LLAMA))) {
                assertEquals(total, next[0]);
                assertEquals(List.of(0), m.tensors().values().stream().map(LoadedTensor::target).distinct().toList());
                assertMatchesReference(m);
                // borrowed memory: release forgets the tensor, the caller's buffer stays
                String first = m.tensors().keySet().iterator().next();
                LoadedTensor t = m.tensor(first).orElseThrow();
                assertTrue(m.release(first));
                assertTrue(t.isReleased());
                assertFalse(arena.isClosed());
                assertTrue(m.tensor(first).isEmpty());
                assertThrows(IllegalStateException.class, t::toByteArray);
            }
            assertFalse(arena.isClosed());
        }
    }

    @Test
    void perTensorBuffersAreFreedOneByOne() throws IOException {
        Device d = PHX.device(0);
        List<RegisteredBuffer> given = new ArrayList<>();
        TensorAllocator own = TensorAllocator.perTensor(n -> {
            RegisteredBuffer b = d.allocate(n);
            given.add(b);
            return b;
        });
        LoadedModel m = WeightLoader.builder().into(own).build().load(Fixtures.file(LLAMA));
        try {
            assertMatchesReference(m);
            assertEquals(reference().size(), given.size());
            String name = m.tensors().keySet().iterator().next();
            LoadedTensor t = m.tensor(name).orElseThrow();
            RegisteredBuffer b = t.buffer().orElseThrow();
            assertTrue(m.release(name));
            assertTrue(b.isClosed(), "an owned destination is freed on release");
            assertTrue(m.release(name), "a second release does nothing");
            assertEquals(reference().size() - 1, m.tensors().size());
            IllegalStateException e = assertThrows(IllegalStateException.class, t::toByteArray);
            assertTrue(e.getMessage().contains("was released"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> m.release("no.such.tensor"));
        } finally {
            m.close();
            m.close();
        }
        assertTrue(given.stream().allMatch(RegisteredBuffer::isClosed), "close frees what was not released");
    }

    @Test
    void theLoadersOwnBuffersCannotBeReleasedPerTensor() throws IOException {
        for (boolean map : new boolean[] {false, true}) {
            try (LoadedModel m = WeightLoader.builder().toHost().mapHost(map).build().load(Fixtures.file(LLAMA))) {
                String name = m.tensors().keySet().iterator().next();
                assertFalse(m.release(name), "one shared allocation: nothing to free before close");
                LoadedTensor t = m.tensor(name).orElseThrow();
                assertFalse(t.isReleased());
                assertEquals(reference().get(name).sha256(), TensorDigests.sha256(t), "still usable");
            }
        }
    }

    @Test
    void aBufferTooSmallNamesTensorAndSizes() throws IOException {
        Path f = TestFiles.valid(dir.resolve("s.safetensors"), Map.of(),
                List.of(spec("ok", Dtype.F32, 4), spec("big", Dtype.F32, 100)));
        List<RegisteredBuffer> given = new ArrayList<>();
        TensorAllocator tooSmall = TensorAllocator.perTensor(n -> {
            RegisteredBuffer b = PHX.host().allocate(n == 400 ? 399 : n);
            given.add(b);
            return b;
        });
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> WeightLoader.builder().into(tooSmall).build().load(f));
        assertTrue(e.getMessage().contains("tensor 'big'") && e.getMessage().contains("400 bytes")
                && e.getMessage().contains("399 bytes from offset 0"), e.getMessage());
        assertTrue(given.stream().allMatch(RegisteredBuffer::isClosed), "handed-over buffers of a failed load are freed");

        try (RegisteredBuffer b = PHX.host().allocate(1000)) {
            IllegalArgumentException off = assertThrows(IllegalArgumentException.class, () -> WeightLoader.builder()
                    .into(t -> TensorDestination.borrowed(b, 900)).build().load(f));
            assertTrue(off.getMessage().contains("tensor 'big'") && off.getMessage().contains("100 bytes from offset 900"),
                    off.getMessage());
            assertFalse(b.isClosed(), "borrowed memory is the caller's, failed load or not");
        }
    }

    @Test
    void missingUnknownAndReadOnlyBuffersAreRefused() throws IOException {
        Path f = TestFiles.valid(dir.resolve("m.safetensors"), Map.of(),
                List.of(spec("a", Dtype.U8, 10), spec("b", Dtype.U8, 10)));
        try (RegisteredBuffer a = PHX.host().allocate(10); Arena arena = Arena.ofConfined()) {
            IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                    () -> WeightLoader.builder().into(Map.of("a", a)).build().load(f));
            assertTrue(missing.getMessage().contains("no caller buffer for tensor 'b'"), missing.getMessage());

            IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                    () -> WeightLoader.builder().into(Map.of("a", a, "typo", a)).build().load(f));
            assertTrue(unknown.getMessage().contains("'typo'"), unknown.getMessage());

            // the selection decides which buffers are needed
            try (LoadedModel m = WeightLoader.builder().select(TensorSelector.names("a")).into(Map.of("a", a))
                    .build().load(f)) {
                assertEquals(10, m.tensor("a").orElseThrow().toByteArray().length);
                WeightLoaderTest.assertContents(m);
            }

            RegisteredBuffer ro = PHX.host().wrap(arena.allocate(10).asReadOnly());
            IllegalArgumentException readOnly = assertThrows(IllegalArgumentException.class, () -> WeightLoader.builder()
                    .select(TensorSelector.names("a")).into(Map.of("a", ro)).build().load(f));
            assertTrue(readOnly.getMessage().contains("read-only"), readOnly.getMessage());
        }
    }
}
