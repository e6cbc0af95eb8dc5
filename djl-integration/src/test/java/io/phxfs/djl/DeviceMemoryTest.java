package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.WeightLoader;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Phoenix loading into device memory, up to the point where a CUDA libtorch would wrap it: run
 * with the fake connector (PHX_CONNECTOR=fake, its own surefire execution), whose device memory
 * Java cannot touch. DJL's CPU libtorch has no CUDA, so the wrap itself must fail cleanly: the
 * JVM survives and the message says why.
 */
@Tag("device")
class DeviceMemoryTest {
    @Test
    void deviceTensorsReachLibtorchAsCudaTensorsAndACpuBuildRefusesCleanly() throws Exception {
        assertEquals("fake", System.getenv("PHX_CONNECTOR"), "this test runs in the fake-device execution");
        DjlRuntime.pytorch();
        try (LoadedModel loaded = WeightLoader.builder().toDevice(0).build().load(TestFixtures.file("tiny-gpt2"))) {
            LoadedTensor t = loaded.tensor("transformer.wte.weight").orElseThrow();
            assertEquals(0, t.target());
            assertTrue(t.segment().isEmpty(), "device memory: no Java segment");
            try (NDManager cpu = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TensorViews.view(t, cpu));
                assertTrue(e.getMessage().contains("device 0") && e.getMessage().contains("Device.gpu(0)"), e.getMessage());
            }
            try (NDManager gpu = NDManager.newBaseManager(Device.gpu(0), DjlRuntime.ENGINE)) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> TensorViews.view(t, gpu));
                assertTrue(e.getMessage().contains("aoti_torch_create_tensor_from_blob"), e.getMessage());
                IllegalArgumentException wrongDevice = assertThrows(IllegalArgumentException.class,
                        () -> PhoenixWeights.load(TestFixtures.file("tiny-gpt2"), gpu));
                assertTrue(wrongDevice.getMessage().contains("host memory"), wrongDevice.getMessage());
            }
            assertFalse(loaded.buffer(0).orElseThrow().isClosed());
        }
    }

    /**
     * A zoo model on a GPU the engine cannot compute on (CI's CPU libtorch) is refused before its
     * weights are read or any tensor is made: libtorch printed its C++ stack inside the first CUDA
     * tensor. (On the H200, scripts/gpu/djl_gpu.sh runs the same model on the GPU.)
     */
    @Test
    void aZooModelOnAGpuTheEngineCannotUseIsRefusedBeforeItsWeightsLoad() throws Exception {
        DjlRuntime.pytorch();
        org.junit.jupiter.api.Assumptions.assumeFalse(ai.djl.engine.Engine.getEngine(DjlRuntime.ENGINE)
                .hasCapability(ai.djl.engine.StandardCapabilities.CUDA), "a CUDA libtorch computes on the GPU");
        Exception e = assertThrows(Exception.class, () -> ai.djl.repository.zoo.Criteria.builder()
                .setTypes(long[].class, float[].class).optDevice(Device.gpu(0))
                .optModelUrls("phoenix://" + TestFixtures.file("tiny-gpt2")).build().loadModel());
        Throwable t = e;
        while (t.getCause() != null && !(t instanceof IllegalArgumentException)) {
            t = t.getCause();
        }
        assertTrue(t.getMessage().contains("gpu(0): this PyTorch engine") && t.getMessage().contains("cannot compute on a GPU"),
                "refused with the reason: " + e);
    }
}
