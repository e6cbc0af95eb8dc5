package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.WeightLoader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every tensor of the reference fixtures becomes an array over the Phoenix buffer (data pointer
 * = the loaded tensor's address) whose dtype, shape and bytes match reference.json, through
 * DJL's direct-buffer path or libtorch's C shim; conversions to float32 match Java's.
 */
class TensorViewsTest {
    static {
        DjlRuntime.pytorch();
    }

    @ParameterizedTest
    @ValueSource(strings = {"dtypes.safetensors", "tiny-llama/model.safetensors", "tiny-llama/kv_600_tokens.safetensors"})
    void everyTensorIsAZeroCopyViewWithTheReferenceBytes(String file) throws Exception {
        JsonNode ref = TestFixtures.json("reference.json").get(file).get("tensors");
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
             PhoenixWeights w = PhoenixWeights.load(TestFixtures.file(file), m)) {
            assertEquals(ref.size(), w.arrays().size(), file);
            for (Map.Entry<String, JsonNode> e : ref.properties()) {
                String name = e.getKey();
                JsonNode r = e.getValue();
                NDArray a = w.get(name);
                LoadedTensor t = w.loaded().tensor(name).orElseThrow();
                assertEquals(r.get("dtype").asText(), TensorViews.torchDtype(a), name);
                assertArrayEquals(TestFixtures.longs(r.get("shape")), TensorViews.shape(a), name);
                if (t.nbytes() > 0) {
                    long ptr = TensorViews.dataPointer(a);
                    io.phxfs.core.RegisteredBuffer b = t.buffer().orElseThrow();
                    assertEquals(t.address(), ptr, name + ": the array's data is the loaded tensor's memory");
                    assertTrue(ptr >= b.address() && ptr + t.nbytes() <= b.address() + b.size(),
                            name + " inside the Phoenix buffer");
                }
                MemorySegment bytes = TensorViews.bytes(a, t.dtype().bits() / 8);
                assertEquals(r.get("nbytes").asLong(), bytes.byteSize(), name);
                String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                        .digest(bytes.toArray(ValueLayout.JAVA_BYTE)));
                assertEquals(r.get("sha256").asText(), sha, name);
                DataType djl = TensorViews.djlType(t.dtype());
                if (djl != null) {
                    assertEquals(djl, a.getDataType(), name);
                }
            }
        }
    }

    @Test
    void djlTypedTensorsMatchDjlsOwnRead() throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
             PhoenixWeights w = PhoenixWeights.load(TestFixtures.file("dtypes.safetensors"), m)) {
            for (String n : new String[] {"f32", "f64", "f16", "i64", "i32", "i8", "u8", "bool", "scalar_f32"}) {
                LoadedTensor t = w.loaded().tensor(n).orElseThrow();
                assertArrayEquals(t.toByteArray(), w.get(n).toByteArray(), n);
            }
        }
    }

    private static float[] decode(byte[] raw, Dtype dtype) {
        MemorySegment s = MemorySegment.ofArray(raw);
        int n = raw.length / (dtype.bits() / 8);
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = switch (dtype) {
                case BF16 -> Float.intBitsToFloat((s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xffff) << 16);
                case F16 -> Float.float16ToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i));
                case F8_E5M2 -> Float.float16ToFloat((short) ((raw[i] & 0xff) << 8));
                case F8_E4M3 -> e4m3(raw[i] & 0xff);
                case I16 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
                case U16 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xffff;
                case U32 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) & 0xffffffffL;
                default -> throw new IllegalArgumentException(dtype.toString());
            };
        }
        return out;
    }

    /** OCP FP8 E4M3 ("fn": no infinities, S.1111.111 is NaN), bias 7. */
    private static float e4m3(int b) {
        int sign = (b >> 7) == 1 ? -1 : 1;
        int exp = (b >> 3) & 0xf;
        int man = b & 7;
        if (exp == 15 && man == 7) {
            return Float.NaN;
        }
        return exp == 0 ? sign * man / 8f * (float) Math.pow(2, -6) : sign * (1 + man / 8f) * (float) Math.pow(2, exp - 7);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bf16", "f16", "f8_e4m3", "f8_e5m2", "i16", "u16", "u32"})
    void conversionToFloat32MatchesAReferenceConversion(String name) throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
             PhoenixWeights w = PhoenixWeights.load(TestFixtures.file("dtypes.safetensors"), m)) {
            LoadedTensor t = w.loaded().tensor(name).orElseThrow();
            float[] expected = decode(t.toByteArray(), t.dtype());
            NDArray f = TensorViews.toFloat32(w.get(name));
            assertEquals(DataType.FLOAT32, f.getDataType());
            assertArrayEquals(expected, f.toFloatArray(), name);
            NDArray h = TensorViews.convert(w.get(name), DataType.FLOAT16);
            assertEquals(DataType.FLOAT16, h.getDataType());
            float[] half = h.toType(DataType.FLOAT32, true).toFloatArray();
            for (int i = 0; i < expected.length; i++) {
                assertEquals(Float.float16ToFloat(Float.floatToFloat16(expected[i])), half[i], name + "[" + i + "]");
            }
        }
    }

    @Test
    void bf16OfTinyLlamaConvertsExactly() throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
             PhoenixWeights w = PhoenixWeights.load(TestFixtures.file("tiny-llama"), m)) {
            for (Map.Entry<String, NDArray> e : w.arrays().entrySet()) {
                LoadedTensor t = w.loaded().tensor(e.getKey()).orElseThrow();
                assertEquals(Dtype.BF16, t.dtype());
                assertArrayEquals(decode(t.toByteArray(), Dtype.BF16), TensorViews.toFloat32(e.getValue()).toFloatArray(),
                        e.getKey());
            }
        }
    }

    @Test
    void aReadOnlyMappingIsRefusedNotFaultedOn() throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PhoenixWeights.load(
                    TestFixtures.file("dtypes.safetensors"), m, WeightLoader.builder().mapHost(true).build()));
            assertTrue(e.getMessage().contains("writable(true)"), e.getMessage());
        }
    }

    @Test
    void oneTensorIsReleasedBeforeTheOthers() throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
             PhoenixWeights w = PhoenixWeights.load(TestFixtures.file("dtypes.safetensors"), m)) {
            NDArray a = w.get("bf16");
            io.phxfs.core.RegisteredBuffer b = w.loaded().tensor("bf16").orElseThrow().buffer().orElseThrow();
            assertTrue(w.release("bf16"), "the tensor's own memory is freed");
            assertTrue(b.isClosed());
            assertThrows(IllegalStateException.class, a::getShape);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.get("bf16"));
            assertTrue(e.getMessage().contains("(released)"), e.getMessage());
            assertFalse(w.release("bf16"), "a second release frees nothing");
            assertThrows(IllegalArgumentException.class, () -> w.release("no-such-tensor"));
            assertEquals(16, w.arrays().size());
            assertArrayEquals(w.loaded().tensor("f32").orElseThrow().toByteArray(), w.get("f32").toByteArray());
        }
    }

    @Test
    void closingReleasesOnceAndUseAfterCloseRaises() throws Exception {
        NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
        PhoenixWeights w = PhoenixWeights.load(TestFixtures.file("dtypes.safetensors"), m);
        NDArray a = w.get("f32");
        java.util.List<io.phxfs.core.RegisteredBuffer> buffers = w.loaded().tensors().values().stream()
                .filter(t -> t.nbytes() > 0).map(t -> t.buffer().orElseThrow()).toList();
        assertEquals(16, buffers.size());
        assertEquals(0, w.releaseCount());
        m.close(); // the manager owns the weights
        assertTrue(w.isClosed());
        assertEquals(1, w.releaseCount());
        w.close();
        assertEquals(1, w.releaseCount(), "a second close releases nothing");
        assertTrue(buffers.stream().allMatch(io.phxfs.core.RegisteredBuffer::isClosed), "the Phoenix buffers are freed");
        assertThrows(IllegalStateException.class, () -> w.get("f32"));
        assertThrows(IllegalStateException.class, a::toFloatArray);
        assertFalse(w.toString().isEmpty());
    }
}
