package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.SafetensorsWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TorchScript path: a TorchScript archive (y = x W^T + b) loaded by DJL with trainParam=true,
 * its parameters replaced from safetensors by Phoenix: float32 tensors aliased (the parameter's
 * data pointer is the Phoenix tensor's), bf16 ones converted.
 */
class TorchScriptTest {
    @TempDir
    Path dir;

    @BeforeEach
    void writeModel() throws Exception {
        DjlRuntime.pytorch();
        TorchScriptArchive.writeLinear(dir.resolve("model.pt"), new float[] {1, 2, 3, 4, 5, 6}, new float[] {10, 20}, 2, 3);
    }

    private ZooModel<NDList, NDList> load(boolean trainParam) throws Exception {
        return Criteria.builder().setTypes(NDList.class, NDList.class).optModelPath(dir).optEngine(DjlRuntime.ENGINE)
                .optOption("trainParam", String.valueOf(trainParam)).build().loadModel();
    }

    private static float[] run(ZooModel<NDList, NDList> m) throws Exception {
        try (Predictor<NDList, NDList> p = m.newPredictor()) {
            NDArray x = m.getNDManager().create(new float[] {1, 1, 1}, new Shape(1, 3));
            return p.predict(new NDList(x)).head().toFloatArray();
        }
    }

    private Path safetensors(String name, Dtype dtype, float[] w, float[] b) throws Exception {
        Path f = dir.resolve(name);
        List<SafetensorsWriter.Spec> specs = List.of(new SafetensorsWriter.Spec("weight", dtype, new long[] {2, 3}),
                new SafetensorsWriter.Spec("bias", dtype, new long[] {2}));
        SafetensorsWriter.write(f, Map.of("format", "pt"), specs, (t, off, dst) -> {
            float[] v = t.name().equals("weight") ? w : b;
            ByteBuffer le = dst.order(ByteOrder.LITTLE_ENDIAN);
            int width = dtype == Dtype.F32 ? 4 : 2;
            for (int i = (int) (off / width); le.remaining() >= width; i++) {
                if (dtype == Dtype.F32) {
                    le.putFloat(v[i]);
                } else {
                    le.putShort((short) (Float.floatToIntBits(v[i]) >>> 16)); // exact: these values fit bf16
                }
            }
        });
        return f;
    }

    @Test
    void theArchiveRunsWithItsOwnWeights() throws Exception {
        try (ZooModel<NDList, NDList> m = load(true)) {
            assertArrayEquals(new float[] {16, 35}, run(m));
        }
    }

    @Test
    void float32TensorsReplaceTheParametersWithoutACopy() throws Exception {
        Path st = safetensors("w.safetensors", Dtype.F32, new float[] {0, 1, 0, 0, 0, 2}, new float[] {-1, -2});
        ZooModel<NDList, NDList> m = load(true);
        try {
            TorchScriptWeights.Result r = TorchScriptWeights.replace(m, st);
            assertEquals(List.of("weight", "bias"), r.aliased());
            assertEquals(List.of(), r.converted());
            assertArrayEquals(new float[] {0, 0}, run(m));
            for (String n : r.aliased()) {
                LoadedTensor t = r.weights().loaded().tensor(n).orElseThrow();
                assertEquals(t.address(), TensorViews.dataPointer(m.getBlock().getParameters().get(n).getArray()),
                        n + ": the parameter's data is the Phoenix tensor");
            }
            PhoenixWeights w = r.weights();
            m.close();
            assertEquals(1, w.releaseCount(), "the weights close with the model, once");
        } finally {
            m.close();
        }
    }

    @Test
    void bf16TensorsAreConvertedIntoFloat32Parameters() throws Exception {
        Path st = safetensors("b.safetensors", Dtype.BF16, new float[] {0.5f, 1, -2, 4, 0, 0.25f}, new float[] {1, 2});
        try (ZooModel<NDList, NDList> m = load(true)) {
            TorchScriptWeights.Result r = TorchScriptWeights.replace(m, st);
            assertEquals(List.of("weight", "bias"), r.converted());
            assertArrayEquals(new float[] {0.5f, 6.25f}, run(m));
        }
    }

    @Test
    void mismatchesAndFrozenParametersFailClearly() throws Exception {
        Path wrongShape = dir.resolve("s.safetensors");
        SafetensorsWriter.write(wrongShape, Map.of(), List.of(new SafetensorsWriter.Spec("weight", Dtype.F32, new long[] {3, 2}),
                new SafetensorsWriter.Spec("bias", Dtype.F32, new long[] {2})), (t, o, d) -> d.position(d.limit()));
        Path f32 = safetensors("w.safetensors", Dtype.F32, new float[6], new float[2]);
        try (ZooModel<NDList, NDList> m = load(true)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> TorchScriptWeights.replace(m, wrongShape));
            assertTrue(e.getMessage().contains("has shape [3, 2], parameter weight [2, 3]"), e.getMessage());
            IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                    () -> TorchScriptWeights.replace(m, f32, n -> "model." + n));
            assertTrue(missing.getMessage().contains("no tensor \"model.weight\""), missing.getMessage());
            assertArrayEquals(new float[] {16, 35}, run(m), "a failed replacement left the model as it was");
        }
        try (ZooModel<NDList, NDList> frozen = load(false)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> TorchScriptWeights.replace(frozen, f32));
            assertTrue(e.getMessage().contains("trainParam"), e.getMessage());
            assertArrayEquals(new float[] {16, 35}, run(frozen));
        }
    }
}
