package io.phxfs.serving.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.kvcache.KvCacheEngine;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvTensors;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The engine's GPU paths with the fake connector (PHX_CONNECTOR=fake, its own surefire
 * execution), whose device memory Java cannot touch: KV caches in device memory filled and read
 * by the tier (the engine's {@link KvMemory}), and an engine on device 0, whose weights reach
 * libtorch as CUDA tensors that the CPU build refuses cleanly: an exception naming why, the JVM
 * and a CPU engine after it running on.
 */
@Tag("device")
class DeviceEngineTest {
    @Test
    void kvCachesInDeviceMemoryAreStoredAndRetrievedByTheTier() throws Exception {
        assertEquals("fake", System.getenv("PHX_CONNECTOR"), "this test runs in the fake-device execution");
        KvLayout layout = new KvLayout(2, 2, 16, KvLayout.DType.BFLOAT16, KvLayout.Kind.KV_2LTD);
        int tokens = 512;
        long bytes = 2L * 16 * tokens * 2;
        KvCacheConfig config = KvCacheConfig.builder().localCpu(true).maxLocalCpuBytes(16L << 20).build();
        int[] prompt = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            prompt[i] = (i * 7919) % 1000;
        }
        try (KvMemory memory = KvMemory.device(0); KvCacheEngine tier = new KvCacheEngine(config, layout);
             Arena arena = Arena.ofConfined()) {
            List<RegisteredBuffer> src = new ArrayList<>();
            List<RegisteredBuffer> dst = new ArrayList<>();
            MemorySegment pattern = arena.allocate(bytes);
            for (int i = 0; i < 4; i++) {
                RegisteredBuffer b = memory.allocate(bytes);
                assertTrue(!b.isHost() && b.deviceId() == 0 && b.segment().isEmpty(), "device memory: " + b);
                for (long o = 0; o < bytes; o += 2) {
                    pattern.set(ValueLayout.JAVA_SHORT_UNALIGNED, o, (short) (o * 31 + i));
                }
                Phoenix.open().device(0).copyToDevice(pattern, b, 0);
                src.add(b);
                dst.add(memory.allocate(bytes));
            }
            try {
                KvTensors from = KvTensors.of(layout, src.subList(0, 2), src.subList(2, 4), 1, 0, tokens);
                KvTensors into = KvTensors.of(layout, dst.subList(0, 2), dst.subList(2, 4), 1, 0, tokens);
                assertEquals(tokens, tier.store(prompt, "model".getBytes(), from));
                assertEquals(tokens, tier.retrieve(prompt, "model".getBytes(), into));
                MemorySegment a = arena.allocate(bytes);
                MemorySegment b = arena.allocate(bytes);
                for (int i = 0; i < 4; i++) {
                    Phoenix.open().device(0).copyToHost(src.get(i), 0, a);
                    Phoenix.open().device(0).copyToHost(dst.get(i), 0, b);
                    assertArrayEquals(a.toArray(ValueLayout.JAVA_BYTE), b.toArray(ValueLayout.JAVA_BYTE), "tensor " + i);
                }
            } finally {
                src.forEach(RegisteredBuffer::close);
                dst.forEach(RegisteredBuffer::close);
            }
        }
    }

    @Test
    void anEngineOnDevice0ReachesLibtorchWithCudaTensorsAndACpuBuildRefusesCleanly() throws Exception {
        // a GPU the CPU libtorch cannot use is refused before the weights load (libtorch printed its
        // C++ stack inside the first CUDA tensor); on the H200, scripts/gpu/djl_gpu.sh serves on it
        org.junit.jupiter.api.Assumptions.assumeFalse(ai.djl.engine.Engine.getEngine("PyTorch")
                .hasCapability(ai.djl.engine.StandardCapabilities.CUDA), "a CUDA libtorch computes on the GPU");
        Exception e = assertThrows(Exception.class,
                () -> GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")).withDevice(0)).close());
        Throwable t = e;
        while (t.getCause() != null && !(t instanceof IllegalArgumentException)) {
            t = t.getCause();
        }
        assertTrue(t.getMessage().contains("gpu(0): this PyTorch engine") && t.getMessage().contains("cannot compute on a GPU"),
                "refused with the reason: " + e);
        // the JVM runs on, and so does an engine on the CPU
        try (GenerationEngine cpu = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")))) {
            Collector c = new Collector();
            cpu.submit(new GenerationRequest("d", new int[] {1, 2, 3}, SamplingParams.greedy(4), null), c);
            assertEquals(4, c.await().tokens().length);
        }
        assertThrows(IllegalArgumentException.class, () -> GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama"))
                .withDevice(-1)));
    }
}
