package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The loader on generated models: bytes, progress, placement, ownership, failures. */
@Tag("io")
class WeightLoaderTest {
    private static final Phoenix PHX = Phoenix.open();

    @TempDir
    Path dir;

    private Path model(String name, int tensors, int elems) throws IOException {
        List<SafetensorsWriter.Spec> specs = new ArrayList<>();
        for (int i = 0; i < tensors; i++) {
            specs.add(spec(name + ".t" + i, i % 2 == 0 ? Dtype.BF16 : Dtype.F32, elems + i * 13L));
        }
        return TestFiles.valid(dir.resolve(name + ".safetensors"), Map.of("format", "pt"), specs);
    }

    /** Every byte of every tensor is what {@link TestFiles#valid} wrote. */
    static void assertContents(LoadedModel m) {
        for (LoadedTensor t : m.tensors().values()) {
            byte[] b = t.toByteArray();
            for (int i = 0; i < b.length; i++) {
                if (b[i] != TestFiles.expected(t.name(), i)) {
                    throw new AssertionError(t + ": byte " + i + " differs");
                }
            }
        }
    }

    @Test
    void progressArrivesInStepsAndEndsAtTheTotal() throws IOException {
        Path f = model("p", 8, 200_000);
        List<long[]> calls = new ArrayList<>();
        WeightLoader loader = WeightLoader.builder().toDevice(0)
                .progress((done, total) -> calls.add(new long[] {done, total}))
                .planOptions(ReadPlan.Options.defaults().withMaxRequestBytes(256 << 10)).build();
        try (LoadedModel m = loader.load(f)) {
            long total = m.plan().readBytes();
            // polled every 50 ms: a small load may finish before the first poll
            assertTrue(calls.size() >= 2, calls.size() + " progress calls");
            assertEquals(0, calls.get(0)[0]);
            long last = -1;
            for (long[] c : calls) {
                assertEquals(total, c[1]);
                assertTrue(c[0] >= last, "progress went back");
                last = c[0];
            }
            assertEquals(total, last);
            assertContents(m);
        }
    }

    @Test
    void aMappedLoadReportsItsBytesAsDoneNotZeroOfZero() throws IOException {
        Path f = model("mapped", 4, 50_000);
        List<long[]> calls = new ArrayList<>();
        try (LoadedModel m = WeightLoader.builder().toHost().mapHost(true)
                .progress((done, total) -> calls.add(new long[] {done, total})).build().load(f)) {
            assertTrue(m.hostMapped());
            assertFalse(calls.isEmpty());
            for (long[] c : calls) {
                assertEquals(m.bytes(), c[1], "total: the mapped tensor bytes");
                assertEquals(m.bytes(), c[0], "a populated mapping is complete once made");
            }
        }
    }

    @Test
    void writableCopiesHostTensorsIntoWritableMemoryEvenWhenMappingWouldDo() throws IOException {
        Path f = model("w", 3, 10_000);
        try (LoadedModel mapped = WeightLoader.builder().toHost().mapHost(true).build().load(f);
             LoadedModel copied = WeightLoader.builder().toHost().writable(true).build().load(f)) {
            assertTrue(mapped.hostMapped());
            assertFalse(copied.hostMapped());
            for (LoadedTensor t : mapped.tensors().values()) {
                assertTrue(t.segment().orElseThrow().isReadOnly(), t.toString());
            }
            for (LoadedTensor t : copied.tensors().values()) {
                java.lang.foreign.MemorySegment seg = t.segment().orElseThrow();
                assertFalse(seg.isReadOnly(), t.toString());
                seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 7);
                assertEquals(7, seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            }
            assertContents(mapped);
        }
        assertThrows(IllegalStateException.class, () -> WeightLoader.builder().writable(true).mapHost(true).build());
    }

    @Test
    void oneBatchOverManyFiles() throws IOException {
        List<SafetensorsHeader> headers = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            headers.add(SafetensorsParser.standard().parse(model("f" + i, 5, 3000 + i * 1000)));
        }
        ModelFiles mf = ModelFiles.of(headers.toArray(SafetensorsHeader[]::new));
        try (LoadedModel m = WeightLoader.builder().toHost().build().load(mf)) {
            assertEquals(6, m.fileCount());
            assertEquals(30, m.tensors().size());
            assertEquals(1, m.buffers().size());
            assertContents(m);
        }
    }

    /**
     * Through the page cache the padding past a file's end is zeroed while the reads run; with
     * O_DIRECT (whole blocks), after them: either way it is zero, and the tensors are whole.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"per file", "O_DIRECT", "page cache"})
    void bytesPastTheEndOfTheFileAreZeroInAnUninitializedBuffer(String open) throws IOException {
        Path f = model("tail", 3, 1001); // the data ends inside a 4 KiB page
        long fileSize = java.nio.file.Files.size(f);
        ReadPlan plan = WeightLoader.builder().toDevice(0).build().plan(ModelFiles.open(f));
        long bytes = plan.bufferBytes().get(0);
        ReadPlan.ReadRequest last = plan.requests().get(plan.requests().size() - 1);
        long tail = last.bufferOffset() + (fileSize - last.fileOffset());
        assertTrue(tail < bytes, "the plan reads past the end of the file: " + tail + " < " + bytes);
        Device d = PHX.device(0);
        // leave dirt where the loader's uninitialized buffer is likely to be placed
        try (RegisteredBuffer dirty = d.allocate(bytes); Arena a = Arena.ofConfined()) {
            d.copyToDevice(a.allocate(bytes).fill((byte) 0x5A), dirty, 0);
        }
        WeightLoader.Builder b = WeightLoader.builder().toDevice(d);
        if (!open.equals("per file")) {
            b.direct(open.equals("O_DIRECT"));
        }
        try (LoadedModel m = b.build().load(f)) {
            assertContents(m);
            byte[] all = new byte[(int) bytes];
            d.copyToHost(m.buffer(0).orElseThrow(), 0, MemorySegment.ofArray(all));
            for (long i = tail; i < bytes; i++) {
                assertEquals(0, all[(int) i], "byte " + i + " past the end of the file");
            }
        }
    }

    /**
     * The early reads' files are closed by the loading thread once their batch has ended; by
     * the time load returns none is open, also when the load failed after the reads.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"page cache", "O_DIRECT"})
    void noDescriptorOfTheCheckpointIsOpenWhenLoadReturns(String open) throws IOException {
        Path f = model("fds", 4, 3000);
        try (LoadedModel m = WeightLoader.builder().toDevice(0).direct(open.equals("O_DIRECT")).build().load(f)) {
            assertContents(m);
            assertEquals(List.of(), descriptorsOf(f));
        }
        // a load that fails after its early reads started (the parse finds the file cut short):
        // the reads are abandoned, and their files closed all the same
        Path cut = model("fds-cut", 4, 3000);
        long size = java.nio.file.Files.size(cut);
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(cut,
                java.nio.file.StandardOpenOption.WRITE)) {
            ch.truncate(size - 100);
        }
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class,
                () -> WeightLoader.builder().toDevice(0).build().load(cut).close());
        assertTrue(e.getMessage().contains(cut.getFileName().toString()), e.getMessage());
        assertEquals(List.of(), descriptorsOf(cut));
    }

    /** This process's descriptors open on {@code file}, as /proc/self/fd names them. */
    private static List<String> descriptorsOf(Path file) throws IOException {
        Path real = file.toRealPath();
        List<String> open = new java.util.ArrayList<>();
        try (var fds = java.nio.file.Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    if (java.nio.file.Files.readSymbolicLink(fd).equals(real)) {
                        open.add(fd.getFileName().toString());
                    }
                } catch (IOException gone) {
                    // the directory stream's own descriptor, closed by now
                }
            }
        }
        return open;
    }

    @Test
    void closeFreesTheMemory() throws IOException {
        LoadedModel m = WeightLoader.builder().toDevice(PHX.device(0)).build().load(model("c", 3, 1000));
        RegisteredBuffer b = m.buffer(0).orElseThrow();
        LoadedTensor t = m.tensors().values().iterator().next();
        m.close();
        assertTrue(b.isClosed());
        assertThrows(IllegalStateException.class, t::toByteArray);
        m.close(); // a second close does nothing
    }

    @Test
    void hostPlacementBesideTheDevice() throws IOException {
        Path f = model("mix", 6, 5000);
        Placement odd = t -> t.name().endsWith("1") || t.name().endsWith("3") || t.name().endsWith("5") ? Placement.HOST : 0;
        try (LoadedModel m = WeightLoader.builder().placement(odd).build().load(f)) {
            assertEquals(List.of(Placement.HOST, 0), List.copyOf(m.buffers().keySet()));
            assertEquals(Placement.HOST, m.tensor("mix.t1").orElseThrow().target());
            assertTrue(m.tensor("mix.t1").orElseThrow().segment().isPresent(), "host memory is reachable from Java");
            assertEquals(0, m.tensor("mix.t0").orElseThrow().target());
            assertContents(m);
        }
    }

    @Test
    void layersSplitOverTwoDevices() throws IOException {
        assumeTrue(PHX.deviceCount() >= 2, "needs two devices (the fake-device execution has them)");
        Path f = model("two", 10, 7000);
        Placement half = t -> Integer.parseInt(t.name().substring(t.name().lastIndexOf('t') + 1)) < 5 ? 0 : 1;
        try (LoadedModel m = WeightLoader.builder().placement(half).build().load(f)) {
            assertEquals(List.of(0, 1), List.copyOf(m.buffers().keySet()));
            assertEquals(1, m.tensor("two.t9").orElseThrow().target());
            assertContents(m);
        }
    }

    @Test
    void hostCopiesReuseThePoolsMemoryAndStillHoldExactlyTheFilesBytes() throws IOException {
        Path big = model("big", 6, 300_000);
        Path small = model("small", 5, 123_457); // another model's bytes lie in the reused memory
        try (io.phxfs.core.HostMemoryPool pool = PHX.host().pool(1L << 30)) {
            WeightLoader loader = WeightLoader.builder().toHost().writable(true).hostMemory(pool).build();
            try (LoadedModel m = loader.load(big)) {
                assertContents(m);
            }
            for (Path f : List.of(small, big)) {
                // both paths: reads started before the parse (load(Path)) and after it
                try (LoadedModel m = loader.load(f)) {
                    assertContents(m);
                }
                try (LoadedModel m = loader.load(ModelFiles.open(f))) {
                    assertContents(m);
                }
            }
            assertEquals(1, pool.newMappings(), "one mapping, reused: " + pool);
            assertEquals(4, pool.reuses());
        }
    }

    @Test
    void bigTensorsSpanSeveralRequests() throws IOException {
        Path f = TestFiles.valid(dir.resolve("big.safetensors"), Map.of(),
                List.of(spec("small", Dtype.U8, 5), spec("big", Dtype.F32, (3 << 20) / 4 + 77), spec("tail", Dtype.I8, 3)));
        try (LoadedModel m = WeightLoader.builder().toDevice(0).direct(true)
                .planOptions(ReadPlan.Options.defaults().withMaxRequestBytes(1 << 20)).build().load(f)) {
            assertTrue(m.plan().requests().size() >= 4);
            assertContents(m);
        }
    }

    @Test
    void emptySelectionsNeedNoMemory() throws IOException {
        Path f = TestFiles.valid(dir.resolve("e.safetensors"), Map.of(),
                List.of(spec("z", Dtype.F32, 0, 8), spec("x", Dtype.F32, 8)));
        try (LoadedModel m = WeightLoader.builder().toDevice(0).select(TensorSelector.regex("nothing")).build().load(f)) {
            assertTrue(m.tensors().isEmpty());
            assertTrue(m.buffers().isEmpty());
            assertEquals(0, m.bytes());
        }
        try (LoadedModel m = WeightLoader.builder().toDevice(0).select(TensorSelector.names("z")).build().load(f)) {
            LoadedTensor z = m.tensor("z").orElseThrow();
            assertTrue(m.buffers().isEmpty());
            assertEquals(0, z.segment().orElseThrow().byteSize());
            assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", TensorDigests.sha256(z));
        }
    }

    @Test
    void aFileThatShrankAfterParsingFailsTheLoad() throws IOException {
        Path f = model("shrink", 4, 50_000);
        ModelFiles mf = ModelFiles.open(f);
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() - 10_000);
        }
        PhoenixException e = assertThrows(PhoenixException.class,
                () -> WeightLoader.builder().toDevice(0).build().load(mf));
        assertTrue(e.getMessage().contains("did the file shrink"), e.getMessage());
        // mapped into host memory: refused before any page past the end could be touched
        PhoenixException mapped = assertThrows(PhoenixException.class,
                () -> WeightLoader.builder().toHost().mapHost(true).build().load(mf));
        assertTrue(mapped.getMessage().contains("did the file shrink"), mapped.getMessage());
        // the same with progress steps, so that the failure comes from a submitted batch
        assertThrows(PhoenixException.class, () -> WeightLoader.builder().toHost().mapHost(false).progress((d, t) -> { })
                .planOptions(ReadPlan.Options.defaults().withMaxRequestBytes(64 << 10))
                .build().load(mf));
    }

    @Test
    void aDeletedFileFailsAsIo() throws IOException {
        Path f = model("gone", 2, 100);
        ModelFiles mf = ModelFiles.open(f);
        java.nio.file.Files.delete(f);
        PhoenixException e = assertThrows(PhoenixException.class, () -> WeightLoader.builder().build().load(mf));
        assertTrue(e.getMessage().contains("gone.safetensors"), e.getMessage());
    }
}
