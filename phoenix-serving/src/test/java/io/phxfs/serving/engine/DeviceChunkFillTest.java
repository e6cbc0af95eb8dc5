package io.phxfs.serving.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.djl.DjlRuntime;
import io.phxfs.djl.TensorViews;
import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvTensors;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The GPU's retrieve (whole chunks in stored layout, rearranged by tensor operations) against
 * the tier's own scatter into per-layer tensors: the same positions, byte for byte. Run here on
 * host memory and the CPU: the operations are the ones the GPU runs.
 */
class DeviceChunkFillTest {
    @Test
    void wholeChunksRearrangedByTensorOpsEqualTheTiersScatter() throws Exception {
        int layers = 3;
        int heads = 2;
        int d = 8;
        int cap = 700;
        KvLayout layout = new KvLayout(layers, heads, d, KvLayout.DType.FLOAT32, KvLayout.Kind.KV_2LTD);
        KvCacheConfig config = KvCacheConfig.builder().localCpu(true).maxLocalCpuBytes(16L << 20).build();
        int[] prompt = new int[cap];
        Random rnd = new Random(3);
        for (int i = 0; i < cap; i++) {
            prompt[i] = rnd.nextInt(1000);
        }
        long bytes = (long) heads * cap * d * Float.BYTES;
        try (KvMemory memory = KvMemory.host(64L << 20);
             PrefixCache tier = new PrefixCache(config, layout, "model-x");
             NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            List<RegisteredBuffer> k = new ArrayList<>();
            List<RegisteredBuffer> v = new ArrayList<>();
            NDArray[] srcK = new NDArray[layers];
            NDArray[] srcV = new NDArray[layers];
            NDArray[] dstK = new NDArray[layers];
            NDArray[] dstV = new NDArray[layers];
            List<RegisteredBuffer> all = new ArrayList<>();
            Shape shape = new Shape(heads, cap, d);
            for (int l = 0; l < layers; l++) {
                RegisteredBuffer kb = memory.allocate(bytes);
                RegisteredBuffer vb = memory.allocate(bytes);
                k.add(kb);
                v.add(vb);
                srcK[l] = TensorViews.view(kb, shape, DataType.FLOAT32, m);
                srcV[l] = TensorViews.view(vb, shape, DataType.FLOAT32, m);
                srcK[l].set(new ai.djl.ndarray.index.NDIndex(":"), m.randomUniform(-1, 1, shape));
                srcV[l].set(new ai.djl.ndarray.index.NDIndex(":"), m.randomUniform(-1, 1, shape));
                RegisteredBuffer dk = memory.allocate(bytes);
                RegisteredBuffer dv = memory.allocate(bytes);
                all.add(dk);
                all.add(dv);
                dstK[l] = TensorViews.view(dk, shape, DataType.FLOAT32, m);
                dstV[l] = TensorViews.view(dv, shape, DataType.FLOAT32, m);
                dstK[l].set(new ai.djl.ndarray.index.NDIndex(":"), 0f);
                dstV[l].set(new ai.djl.ndarray.index.NDIndex(":"), 0f);
            }
            all.addAll(k);
            all.addAll(v);
            try {
                byte[] extra = tier.extra(null);
                // the tier stores whole chunks: 512 of the 700 positions
                assertEquals(512, tier.tierForTest().store(prompt, extra, KvTensors.of(layout, k, v, 1, 0, cap)));
                int got = DeviceChunkFill.fill(tier, java.util.Arrays.copyOf(prompt, 600), extra, layout, memory, dstK, dstV,
                        DataType.FLOAT32, m);
                assertEquals(512, got, "the whole chunks of 600 tokens");
                for (int l = 0; l < layers; l++) {
                    for (NDArray[] pair : new NDArray[][] {{srcK[l], dstK[l]}, {srcV[l], dstV[l]}}) {
                        ai.djl.ndarray.index.NDIndex first = new ai.djl.ndarray.index.NDIndex(":, 0:512, :");
                        assertArrayEquals(pair[0].get(first).toFloatArray(), pair[1].get(first).toFloatArray(), "layer " + l);
                        ai.djl.ndarray.index.NDIndex rest = new ai.djl.ndarray.index.NDIndex(":, 512:, :");
                        assertEquals(0f, pair[1].get(rest).abs().sum().getFloat(), "nothing past the chunks is written");
                    }
                }
            } finally {
                for (NDArray[] arrays : new NDArray[][] {srcK, srcV, dstK, dstV}) {
                    for (NDArray a : arrays) {
                        a.close();
                    }
                }
                all.forEach(RegisteredBuffer::close);
            }
        }
    }
}
