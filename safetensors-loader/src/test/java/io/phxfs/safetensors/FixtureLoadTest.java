package io.phxfs.safetensors;

import io.phxfs.core.Phoenix;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reference fixtures loaded into memory: every tensor's SHA-256, computed from the loaded
 * memory, matches reference.json. Runs against host memory and device 0 (the host connector
 * on a CPU-only machine, the fake device in the fake-device execution, the GPU on a GPU host).
 */
@Tag("io")
class FixtureLoadTest {
    /** HOST_MAPPED: the files mapped, tensors are views; HOST: read into anonymous memory. */
    enum Target {
        HOST, HOST_MAPPED, DEVICE
    }

    private static WeightLoader.Builder loader(Target target) {
        WeightLoader.Builder b = WeightLoader.builder();
        return switch (target) {
            case HOST -> b.toHost().mapHost(false);
            case HOST_MAPPED -> b.toHost().mapHost(true);
            case DEVICE -> b.toDevice(Phoenix.open().device(0));
        };
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void everyFixtureFileLoadsAndMatchesReference(Target target) throws IOException {
        WeightLoader loader = loader(target).build();
        for (Map.Entry<String, Fixtures.RefFile> f : Fixtures.reference().entrySet()) {
            try (LoadedModel m = loader.load(Fixtures.file(f.getKey()))) {
                assertEquals(f.getValue().tensors().keySet(), new TreeSet<>(m.tensors().keySet()), f.getKey());
                Map<String, String> sha = TensorDigests.sha256(m);
                for (Map.Entry<String, Fixtures.RefTensor> t : f.getValue().tensors().entrySet()) {
                    LoadedTensor lt = m.tensor(t.getKey()).orElseThrow();
                    String what = f.getKey() + " " + t.getKey();
                    assertEquals(t.getValue().dtype(), lt.dtype(), what);
                    assertArrayEquals(t.getValue().shape(), lt.shape(), what);
                    assertEquals(t.getValue().nbytes(), lt.nbytes(), what);
                    assertEquals(t.getValue().sha256(), sha.get(t.getKey()), what + " sha256");
                }
                assertEquals(target == Target.DEVICE ? 0 : -1, m.buffers().firstKey());
                assertTrue(m.seconds() > 0);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void shardedGpt2EqualsTheSingleFile(Target target) throws IOException {
        WeightLoader loader = loader(target).build();
        try (LoadedModel single = loader.load(Fixtures.file("tiny-gpt2"));
             LoadedModel sharded = loader.load(Fixtures.file("tiny-gpt2-sharded"))) {
            assertEquals(5, sharded.fileCount());
            assertEquals(1, single.fileCount());
            assertEquals(new TreeSet<>(single.tensors().keySet()), new TreeSet<>(sharded.tensors().keySet()));
            assertEquals(single.bytes(), sharded.bytes());
            for (LoadedTensor a : single.tensors().values()) {
                LoadedTensor b = sharded.tensor(a.name()).orElseThrow();
                assertEquals(a.dtype(), b.dtype(), a.name());
                assertArrayEquals(a.shape(), b.shape(), a.name());
                assertArrayEquals(a.toByteArray(), b.toByteArray(), a.name());
            }
            // and both agree with the reference of the single file
            Map<String, String> sha = TensorDigests.sha256(sharded);
            Fixtures.reference().get("tiny-gpt2/model.safetensors").tensors()
                    .forEach((name, ref) -> assertEquals(ref.sha256(), sha.get(name), name));
        }
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void selectionLoadsOnlyWhatItNames(Target target) throws IOException {
        Path model = Fixtures.file("tiny-gpt2-sharded");
        Map<String, Fixtures.RefTensor> ref = Fixtures.reference().get("tiny-gpt2/model.safetensors").tensors();

        try (LoadedModel m = loader(target).select(TensorSelector.regex("^transformer\\.h\\.1\\.")).build().load(model)) {
            TreeSet<String> want = new TreeSet<>();
            ref.keySet().stream().filter(n -> n.startsWith("transformer.h.1.")).forEach(want::add);
            assertEquals(want, new TreeSet<>(m.tensors().keySet()));
            long bytes = want.stream().mapToLong(n -> ref.get(n).nbytes()).sum();
            assertEquals(bytes, m.bytes());
            if (target != Target.HOST_MAPPED) { // a mapping spans whole shards but copies nothing
                long buffer = m.buffers().values().stream().mapToLong(b -> b.size()).sum();
                assertTrue(buffer < ModelFiles.open(model).tensorBytes(), "buffer " + buffer + " holds only the selection");
            }
            Map<String, String> sha = TensorDigests.sha256(m);
            want.forEach(n -> assertEquals(ref.get(n).sha256(), sha.get(n), n));
        }

        try (LoadedModel m = loader(target).select(TensorSelector.names("transformer.wpe.weight", "transformer.ln_f.bias"))
                .build().load(model)) {
            assertEquals(new TreeSet<>(java.util.List.of("transformer.wpe.weight", "transformer.ln_f.bias")),
                    new TreeSet<>(m.tensors().keySet()));
            assertEquals(2, m.fileCount());
            assertEquals(ref.get("transformer.ln_f.bias").sha256(),
                    TensorDigests.sha256(m.tensor("transformer.ln_f.bias").orElseThrow()));
        }

        try (LoadedModel m = loader(target).select(TensorSelector.of(n -> n.endsWith(".bias"))).build().load(model)) {
            assertTrue(m.tensors().keySet().stream().allMatch(n -> n.endsWith(".bias")));
            assertEquals(ref.keySet().stream().filter(n -> n.endsWith(".bias")).count(), m.tensors().size());
        }

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> loader(target).select(TensorSelector.names("nope")).build().load(model));
        assertTrue(e.getMessage().contains("no tensor named 'nope'"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(Target.class)
    void directReadsGiveTheSameBytes(Target target) throws IOException {
        Path file = Fixtures.file("tiny-llama/model.safetensors");
        Map<String, String> buffered;
        try (LoadedModel m = loader(target).build().load(file)) {
            buffered = new TreeMap<>(TensorDigests.sha256(m));
        }
        try (LoadedModel m = loader(target).direct(true).build().load(file)) {
            assertEquals(buffered, new TreeMap<>(TensorDigests.sha256(m)));
        }
        Fixtures.reference().get("tiny-llama/model.safetensors").tensors()
                .forEach((n, r) -> assertEquals(r.sha256(), buffered.get(n), n));
    }
}
