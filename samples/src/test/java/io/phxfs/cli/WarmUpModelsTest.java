package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.WeightLoader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The warm-up's models are what they claim to be: loadable sharded checkpoints of two dtypes
 * whose index and headers are laid out as each writer lays them out (the point of them is to
 * give the JIT those shapes before the user's load does).
 */
class WarmUpModelsTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(WarmUpModels.Style.class)
    void eachStyleLoadsAndIsLaidOutAsItsWriterLaysItOut(WarmUpModels.Style style) throws Exception {
        Path first = WarmUpModels.write(dir, style, 2, 3, true);
        assertEquals(dir.resolve("model-00001-of-00002.safetensors"), first);
        String index = Files.readString(dir.resolve("model.safetensors.index.json"));
        JsonNode parsed = new ObjectMapper().readTree(index);
        assertEquals(8, parsed.path("weight_map").size(), index);
        switch (style) {
            // json.dumps(index, indent=2, sort_keys=True) + "\n", as transformers writes it
            case TRANSFORMERS -> {
                assertTrue(index.startsWith("{\n  \"metadata\": {\n    \"total_size\": "), index);
                assertTrue(index.contains("\n  \"weight_map\": {\n    \"model.layers.0.self_attn.q_proj.weight\": \"model-00001-of-00002.safetensors\",\n"), index);
                assertTrue(index.endsWith("\"\n  }\n}\n"), index);
            }
            // Jackson's default pretty printer, as phoenix gen-model writes it
            case JACKSON -> {
                assertTrue(index.startsWith("{\n  \"metadata\" : {\n    \"total_size\" : "), index);
                assertTrue(index.endsWith("\"\n  }\n}"), index);
            }
            case COMPACT -> assertTrue(index.startsWith("{\"metadata\":{\"total_size\":") && !index.contains(" ")
                    && !index.contains("\n"), index);
        }
        // the keys of the weight_map in sorted order, as sort_keys gives them
        Set<String> keys = new TreeSet<>();
        parsed.path("weight_map").fieldNames().forEachRemaining(keys::add);
        assertEquals(String.join(",", keys), String.join(",", iterable(parsed.path("weight_map").fieldNames())));

        byte[] bytes = Files.readAllBytes(first);
        long n = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        String header = new String(bytes, 8, (int) n, StandardCharsets.UTF_8);
        assertTrue(header.startsWith("{\"__metadata__\":{\"format\":\"pt\"},\"model.layers.0.self_attn.q_proj.weight\":{\"dtype\":\"BF16\","
                + "\"shape\":[16,8],\"data_offsets\":[0,256]}"), header);
        if (style == WarmUpModels.Style.TRANSFORMERS) {
            // safetensors pads its header with spaces to a multiple of 8 bytes
            assertEquals(0, n % 8, header);
        } else {
            assertTrue(header.endsWith("}}"), header);
        }

        try (LoadedModel m = WeightLoader.builder().toHost().build().load(dir)) {
            assertEquals(8, m.tensors().size());
            Set<String> dtypes = new TreeSet<>();
            for (LoadedTensor t : m.tensors().values()) {
                dtypes.add(t.dtype().headerName());
                for (byte b : t.toByteArray()) {
                    assertEquals(0, b, t.name());
                }
            }
            assertEquals(Set.of("BF16", "F32"), dtypes);
        }
    }

    private static <T> Iterable<T> iterable(java.util.Iterator<T> it) {
        return () -> it;
    }
}
