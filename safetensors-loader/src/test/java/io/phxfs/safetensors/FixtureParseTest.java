package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The parser on files written by the reference tools agrees with reference.json. */
class FixtureParseTest {
    @Test
    void everyFixtureParsesAsTheReferenceSays() throws IOException {
        Map<String, Fixtures.RefFile> ref = Fixtures.reference();
        assertTrue(ref.size() >= 9, "reference.json lists " + ref.size() + " files");
        for (Map.Entry<String, Fixtures.RefFile> f : ref.entrySet()) {
            SafetensorsHeader h = SafetensorsParser.standard().parse(Fixtures.file(f.getKey()));
            assertEquals(f.getValue().metadata(), h.metadata(), f.getKey() + " metadata");
            assertEquals(f.getValue().tensors().keySet(), new TreeSet<>(h.names()), f.getKey() + " names");
            long sum = 0;
            for (Map.Entry<String, Fixtures.RefTensor> t : f.getValue().tensors().entrySet()) {
                TensorInfo info = h.tensor(t.getKey()).orElseThrow();
                String what = f.getKey() + " " + t.getKey();
                assertEquals(t.getValue().dtype(), info.dtype(), what + " dtype");
                assertArrayEquals(t.getValue().shape(), info.shape(), what + " shape");
                assertEquals(t.getValue().nbytes(), info.nbytes(), what + " nbytes");
                sum += info.nbytes();
            }
            assertEquals(h.dataBytes(), sum, f.getKey() + ": tensors tile the data section");
        }
    }

    @Test
    void referenceCoversEverySafetensorsFileOfTheFixtures() throws IOException {
        Set<String> files = new TreeSet<>();
        try (java.util.stream.Stream<Path> s = java.nio.file.Files.walk(Fixtures.dir())) {
            s.filter(p -> p.toString().endsWith(".safetensors"))
                    .forEach(p -> files.add(Fixtures.dir().relativize(p).toString()));
        }
        assertEquals(files, Fixtures.reference().keySet());
    }

    @Test
    void dtypesFixtureHasTheScalarAndTheEmptyTensor() throws IOException {
        SafetensorsHeader h = SafetensorsParser.standard().parse(Fixtures.file("dtypes.safetensors"));
        TensorInfo scalar = h.tensor("scalar_f32").orElseThrow();
        assertEquals(0, scalar.rank());
        assertEquals(1, scalar.numel());
        assertEquals(4, scalar.nbytes());
        TensorInfo empty = h.tensor("empty_f32").orElseThrow();
        assertEquals(0, empty.numel());
        assertEquals(0, empty.nbytes());
        Set<Dtype> seen = new TreeSet<>();
        h.tensors().forEach(t -> seen.add(t.dtype()));
        assertEquals(Set.of(Dtype.F64, Dtype.F32, Dtype.F16, Dtype.BF16, Dtype.I64, Dtype.I32, Dtype.I16, Dtype.I8,
                Dtype.U8, Dtype.U16, Dtype.U32, Dtype.U64, Dtype.BOOL, Dtype.F8_E4M3, Dtype.F8_E5M2), seen);
        assertEquals("all dtypes", h.metadata().get("note"));
    }

    @Test
    void directoryIndexAndFileResolveToTheSameModel() throws IOException {
        ModelFiles dir = ModelFiles.open(Fixtures.file("tiny-gpt2-sharded"));
        ModelFiles index = ModelFiles.open(Fixtures.file("tiny-gpt2-sharded/" + ModelFiles.INDEX_FILE));
        ModelFiles single = ModelFiles.open(Fixtures.file("tiny-gpt2"));
        assertEquals(5, dir.files().size());
        assertTrue(dir.index().isPresent());
        assertEquals(new TreeSet<>(dir.names()), new TreeSet<>(index.names()));
        assertEquals(new TreeSet<>(single.names()), new TreeSet<>(dir.names()));
        assertEquals(single.tensorBytes(), dir.tensorBytes());
        assertEquals("model-00001-of-00005.safetensors",
                dir.relativeName(dir.fileOf("transformer.wte.weight").orElseThrow().file()));
        Path file = Fixtures.file("tiny-llama/kv_600_tokens.safetensors");
        ModelFiles kv = ModelFiles.open(file);
        assertEquals(1, kv.files().size());
        assertEquals(5, kv.names().size());
    }
}
