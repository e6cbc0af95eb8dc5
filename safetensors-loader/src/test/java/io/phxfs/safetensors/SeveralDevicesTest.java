package io.phxfs.safetensors;

import io.phxfs.core.Phoenix;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Several devices: {@code replicate} (the whole model on each, 1/N read from the file by each,
 * the rest copied device to device) and {@code split} (layers spread in order). The
 * fake-device execution has four devices; every byte on every device is checked.
 */
@Tag("io")
class SeveralDevicesTest {
    private static final Phoenix PHX = Phoenix.open();

    @TempDir
    Path dir;

    /** A Llama-named model: embeddings, {@code layers} layers of three tensors, final norm and head. */
    private Path llama(int layers, int sizeBase) throws IOException {
        List<SafetensorsWriter.Spec> specs = new ArrayList<>();
        specs.add(spec("model.embed_tokens.weight", Dtype.BF16, 3 * sizeBase + 1));
        for (int i = 0; i < layers; i++) {
            String p = "model.layers." + i + ".";
            specs.add(spec(p + "input_layernorm.weight", Dtype.F32, 97 + i));
            specs.add(spec(p + "self_attn.q_proj.weight", Dtype.BF16, sizeBase + 4099L * i));
            specs.add(spec(p + "mlp.down_proj.weight", Dtype.BF16, 2 * sizeBase + 13));
        }
        specs.add(spec("model.norm.weight", Dtype.F32, 333));
        specs.add(spec("lm_head.weight", Dtype.BF16, 3 * sizeBase + 1));
        return TestFiles.valid(dir.resolve("model.safetensors"), Map.of("format", "pt"), specs);
    }

    private static int devices() {
        int n = PHX.deviceCount();
        assumeTrue(n >= 2 && !PHX.device(0).isHostMemory(), "needs several accelerator devices (the fake-device execution has 4)");
        return n;
    }

    private static void assertBytes(Map<String, LoadedTensor> tensors, int device) {
        for (LoadedTensor t : tensors.values()) {
            assertEquals(device, t.target(), t.toString());
            byte[] b = t.toByteArray();
            for (int i = 0; i < b.length; i++) {
                if (b[i] != TestFiles.expected(t.name(), i)) {
                    throw new AssertionError("device " + device + ": " + t + ": byte " + i + " differs");
                }
            }
        }
    }

    @Test
    void replicateGivesEveryDeviceEveryByte() throws IOException {
        int n = devices();
        Path f = llama(9, 300_000);
        List<Integer> ids = IntStream.range(0, n).boxed().toList();
        // small requests, so that each device's share is several of them
        try (LoadedModel m = WeightLoader.builder().replicate(ids)
                .planOptions(ReadPlan.Options.defaults().withMaxRequestBytes(1 << 20)).build().load(f)) {
            assertTrue(m.plan().requests().size() >= 2 * n, m.plan().toString());
            assertEquals(ids, List.copyOf(m.buffers().keySet()));
            for (int d : ids) {
                Map<String, LoadedTensor> on = m.tensorsOn(d);
                assertEquals(m.model().names().size(), on.size());
                assertBytes(on, d);
            }
            assertEquals(m.tensorsOn(0).keySet(), m.tensors().keySet());
        }
    }

    @Test
    void replicateInAnyOrderAndOntoOneDevice() throws IOException {
        int n = devices();
        Path f = llama(3, 50_000);
        try (LoadedModel m = WeightLoader.builder().replicate(n - 1, 0).build().load(f)) {
            assertBytes(m.tensorsOn(n - 1), n - 1);
            assertBytes(m.tensorsOn(0), 0);
            assertEquals(n - 1, m.tensors().values().iterator().next().target(), "tensors() are the first device's");
        }
        try (LoadedModel m = WeightLoader.builder().replicate(1).build().load(f)) {
            assertBytes(m.tensorsOn(1), 1);
        }
    }

    @Test
    void splitPutsConsecutiveLayersOnEachDeviceAndReadsOnlyThose() throws IOException {
        int n = devices();
        int layers = 2 * n + 1;
        Path f = llama(layers, 40_000);
        int[] ids = IntStream.range(0, n).toArray();
        try (LoadedModel m = WeightLoader.builder().split(ids).build().load(f)) {
            int previous = 0;
            for (int i = 0; i < layers; i++) {
                int d = m.tensor("model.layers." + i + ".self_attn.q_proj.weight").orElseThrow().target();
                assertEquals(d, m.tensor("model.layers." + i + ".mlp.down_proj.weight").orElseThrow().target(), "whole layers");
                assertTrue(d == previous || d == previous + 1, "layer " + i + " on device " + d + " after " + previous);
                previous = d;
            }
            assertEquals(n - 1, previous, "the last layers on the last device");
            assertEquals(0, m.tensor("model.embed_tokens.weight").orElseThrow().target());
            assertEquals(n - 1, m.tensor("model.norm.weight").orElseThrow().target());
            assertEquals(n - 1, m.tensor("lm_head.weight").orElseThrow().target());
            long total = 0;
            for (int d : ids) {
                Map<String, LoadedTensor> on = m.tensorsOn(d);
                assertTrue(!on.isEmpty(), "device " + d + " got layers");
                assertBytes(on, d);
                total += on.size();
                // each device's buffer holds its own tensors (plus alignment), not the model
                long own = on.values().stream().mapToLong(LoadedTensor::nbytes).sum();
                assertTrue(m.buffer(d).orElseThrow().size() < own + 2 * 4096 * on.size() + 8192, "device " + d);
            }
            assertEquals(m.model().names().size(), total);
        }
    }

    @Test
    void theCallersPlacementOverridesTheLayerRule() throws IOException {
        int n = devices();
        Path f = llama(4, 20_000);
        Placement heads = t -> t.name().equals("lm_head.weight") ? 0 : t.name().contains("norm") ? Placement.HOST
                : Placement.BY_LAYER;
        try (LoadedModel m = WeightLoader.builder().split(List.of(n - 1, 0), heads).writable(true).build().load(f)) {
            assertEquals(0, m.tensor("lm_head.weight").orElseThrow().target());
            assertEquals(Placement.HOST, m.tensor("model.norm.weight").orElseThrow().target());
            assertEquals(Placement.HOST, m.tensor("model.layers.2.input_layernorm.weight").orElseThrow().target());
            assertEquals(n - 1, m.tensor("model.embed_tokens.weight").orElseThrow().target(), "first of the given order");
            assertEquals(n - 1, m.tensor("model.layers.0.self_attn.q_proj.weight").orElseThrow().target());
            assertEquals(0, m.tensor("model.layers.3.self_attn.q_proj.weight").orElseThrow().target());
            for (LoadedTensor t : m.tensors().values()) {
                byte[] b = t.toByteArray();
                for (int i = 0; i < b.length; i++) {
                    assertEquals(TestFiles.expected(t.name(), i), b[i], t + " byte " + i);
                }
            }
        }
    }

    @Test
    void badDeviceListsAreRefusedByName() {
        assertThrows(IllegalArgumentException.class, () -> WeightLoader.builder().replicate());
        assertThrows(IllegalArgumentException.class, () -> WeightLoader.builder().replicate(0, 0));
        assertThrows(IllegalArgumentException.class, () -> WeightLoader.builder().split(0, -1));
        String msg = assertThrows(IllegalArgumentException.class, () -> WeightLoader.builder().split(1, 1)).getMessage();
        assertTrue(msg.contains("each id once"), msg);
    }

    @Test
    void theLayerRuleReadsTheCommonNames() {
        assertEquals(7, LayerSplit.layerOf("model.layers.7.mlp.experts.3.up_proj.weight"));
        assertEquals(12, LayerSplit.layerOf("transformer.h.12.attn.c_attn.weight"));
        assertEquals(0, LayerSplit.layerOf("blocks.0.norm"));
        assertEquals(-1, LayerSplit.layerOf("model.norm.weight"));
        assertEquals(-1, LayerSplit.layerOf("lm_head.weight"));
        assertEquals(-1, LayerSplit.layerOf("model.layers_norm.3"));
        assertTrue(LayerSplit.inputSide("transformer.wte.weight"));
        assertTrue(LayerSplit.inputSide("model.embed_tokens.weight"));
        assertNotEquals(true, LayerSplit.inputSide("lm_head.weight"));
    }
}
