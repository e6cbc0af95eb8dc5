package io.phxfs.safetensors;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Host-mapped loads whose files are mapped while their headers are parsed
 * ({@link EarlyMapping}): the bytes, the mapping's lifetime in the process's address space
 * (/proc/self/maps), and loads that fail after the mapping began.
 */
@Tag("io")
class EarlyMappingTest {
    @TempDir
    Path dir;

    /** A sharded model of {@code shards} files and its index. */
    private Path sharded(String name, int shards) throws IOException {
        Path d = dir.resolve(name);
        StringBuilder index = new StringBuilder("{\"metadata\":{\"total_size\":0},\"weight_map\":{");
        for (int s = 1; s <= shards; s++) {
            String file = String.format("model-%05d-of-%05d.safetensors", s, shards);
            List<SafetensorsWriter.Spec> specs = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                String t = "layers." + s + "." + i + ".weight";
                specs.add(spec(t, i % 2 == 0 ? Dtype.BF16 : Dtype.F32, 3_000 + 17L * i));
                index.append(s == 1 && i == 0 ? "" : ",").append('"').append(t).append("\":\"").append(file).append('"');
            }
            TestFiles.valid(d.resolve(file), Map.of("format", "pt"), specs);
        }
        Files.writeString(d.resolve(ModelFiles.INDEX_FILE), index.append("}}"));
        return d;
    }

    /** How many of this process's mappings are of a file under {@code d}. */
    private static long mappingsUnder(Path d) throws IOException {
        String prefix = d.toRealPath().toString();
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> l.contains(prefix)).count();
    }

    /**
     * Tensors of three shards alternating between the mapped files and a device: no early
     * mapping (two targets), the usual one, and every view at its own file's bytes.
     */
    @Test
    void shardsMappedBesideADeviceGiveEachViewItsOwnFilesBytes() throws IOException {
        Path d = sharded("mixed", 3);
        Placement alternate = t -> t.name().endsWith(".1.weight") || t.name().endsWith(".3.weight") ? 0 : Placement.HOST;
        try (LoadedModel m = WeightLoader.builder().placement(alternate).mapHost(true).build().load(d)) {
            assertTrue(m.hostMapped());
            assertEquals(List.of(Placement.HOST, 0), List.copyOf(m.buffers().keySet()));
            assertEquals(0, m.tensor("layers.2.1.weight").orElseThrow().target());
            assertEquals(Placement.HOST, m.tensor("layers.3.4.weight").orElseThrow().target());
            assertEquals(15, m.tensors().size());
            WeightLoaderTest.assertContents(m);
        }
    }

    @Test
    void aShardedModelIsMappedWhileParsedAndUnmappedOnClose() throws IOException {
        Path d = sharded("ok", 3);
        try (LoadedModel m = WeightLoader.builder().toHost().mapHost(true).build().load(d)) {
            assertTrue(m.hostMapped());
            assertEquals(15, m.tensors().size());
            WeightLoaderTest.assertContents(m);
            assertTrue(mappingsUnder(d) >= 3, "each shard mapped");
            // the mapping ran beside the parse: only its wait (if any) is the allocate phase,
            // and the phases still tile the load
            assertEquals(m.seconds(), m.locateSeconds() + m.parseSeconds() + m.planSeconds() + m.allocateSeconds()
                    + m.readSeconds() + m.viewSeconds() + m.otherSeconds(), 1e-6);
        }
        assertEquals(0, mappingsUnder(d), "closing the model unmaps every shard");
    }

    @Test
    void aHeaderThatFailsTheParseLeavesNoMappingBehind() throws IOException {
        Path d = sharded("bad", 3);
        // the last shard's header broken after the locate found it: the mapping has begun
        Path last = d.resolve("model-00003-of-00003.safetensors");
        byte[] b = Files.readAllBytes(last);
        b[8] = '['; // the header's opening brace
        Files.write(last, b);
        WeightLoader loader = WeightLoader.builder().toHost().mapHost(true).build();
        for (int i = 0; i < 20; i++) {
            assertThrows(SafetensorsFormatException.class, () -> loader.load(d));
        }
        assertEquals(0, mappingsUnder(d), "a failed load unmaps what it mapped early");
    }

    @Test
    void aFileThatGrowsAfterTheMappingBeganIsCaught() throws IOException {
        Path d = sharded("grow", 2);
        WeightLoader loader = WeightLoader.builder().toHost().mapHost(true).build();
        try (LoadedModel m = loader.load(d)) {
            assertTrue(m.hostMapped());
        }
        // bytes appended: the header now implies another size; the loader must not hand out a
        // mapping of the old extent as if it were the parsed file
        Path first = d.resolve("model-00001-of-00002.safetensors");
        Files.write(first, new byte[4096], java.nio.file.StandardOpenOption.APPEND);
        Exception e = assertThrows(Exception.class, () -> loader.load(d).close());
        assertTrue(e.getMessage().contains("model-00001-of-00002.safetensors"), e.getMessage());
        assertEquals(0, mappingsUnder(d));
    }

    @Test
    void aFileReplacedAfterTheMappingIsNotTakenForTheParsedOne() throws IOException {
        Path d = sharded("swap", 2);
        Path first = d.resolve("model-00001-of-00002.safetensors");
        // the same size, other bytes: what a re-save of the checkpoint under its old name gives
        Path other = dir.resolve("other.safetensors");
        List<SafetensorsWriter.Spec> specs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            specs.add(spec("layers.1." + i + ".weight", i % 2 == 0 ? Dtype.BF16 : Dtype.F32, 3_000 + 17L * i));
        }
        SafetensorsWriter.write(other, Map.of("format", "pt"), specs, (t, off, dst) -> {
            while (dst.hasRemaining()) dst.put((byte) 0x5a);
        });
        assertEquals(Files.size(first), Files.size(other));
        List<Path> files = List.of(first, d.resolve("model-00002-of-00002.safetensors"));
        EarlyMapping early = EarlyMapping.start(files, true);
        early.awaitPopulated(); // mapped (and populated) before the swap
        Files.move(other, first, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        ModelFiles model = ModelFiles.open(d);
        assertEquals(null, early.finish(model.files()), "the mapping is of the file that was replaced");
        assertEquals(0, mappingsUnder(d), "and it is unmapped");
        // the load itself maps the file that is there now, and reads its bytes
        try (LoadedModel m = WeightLoader.builder().toHost().mapHost(true).build().load(d)) {
            byte[] b = m.tensor("layers.1.0.weight").orElseThrow().toByteArray();
            assertEquals(0x5a, b[0]);
            assertEquals(0x5a, b[b.length - 1]);
        }
    }

    @Test
    void copiesAndDeviceLoadsDoNotMapEarly() throws IOException {
        Path d = sharded("copy", 2);
        try (LoadedModel m = WeightLoader.builder().toHost().writable(true).build().load(d)) {
            assertFalse(m.hostMapped());
            assertEquals(0, mappingsUnder(d), "a writable copy maps nothing");
            WeightLoaderTest.assertContents(m);
        }
        try (LoadedModel m = WeightLoader.builder().toHost().mapHost(false).build().load(d)) {
            assertFalse(m.hostMapped());
            assertEquals(0, mappingsUnder(d));
        }
    }
}
