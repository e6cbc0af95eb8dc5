package io.phxfs.serving.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.djl.TensorViews;
import io.phxfs.kvcache.ChunkedKv;
import io.phxfs.kvcache.KvLayout;

/**
 * A retrieve into a cache on a GPU: the tier moves whole chunks in their stored layout
 * ({@code [2, layers, tokens, kv_heads, head_dim]} each) into one device buffer, one copy per
 * chunk, and the GPU rearranges them into the model's per-layer {@code [kv_heads, positions,
 * head_dim]} arrays (a transpose per layer and tensor). Gathering through the host instead
 * costs one copy per (chunk, layer, tensor, head): 17,000 small copies for 8,000 tokens of an
 * 8B Llama.
 */
final class DeviceChunkFill {
    private DeviceChunkFill() {
    }

    /**
     * The first {@code tokens} prompt positions into {@code keys}/{@code values} (starting at
     * their position 0), from the tier; the whole chunks filled.
     */
    static int fill(PrefixCache tier, int[] tokens, byte[] extra, KvLayout layout, KvMemory memory, NDArray[] keys,
                    NDArray[] values, DataType dtype, NDManager parent) {
        int chunk = tier.chunkSize();
        int chunks = tokens.length / chunk;
        if (chunks == 0) {
            return 0;
        }
        long bytes = layout.bytesPerChunk(chunk) * chunks;
        try (RegisteredBuffer staging = memory.allocate(bytes); NDManager m = parent.newSubManager()) {
            int got = tier.retrieve(java.util.Arrays.copyOf(tokens, chunks * chunk), extra, new ChunkedKv(staging, layout, chunk));
            int whole = Math.max(0, got) / chunk;
            if (whole == 0) {
                return 0;
            }
            NDArray all = TensorViews.view(staging, new Shape(chunks, 2, layout.layers(), chunk, layout.kvHeads(), layout.headDim()),
                    dtype, m);
            int n = whole * chunk;
            NDIndex into = new NDIndex().addAllDim().addSliceDim(0, n);
            try {
                for (int l = 0; l < layout.layers(); l++) {
                    for (int kv = 0; kv < 2; kv++) {
                        // [whole, tokens, heads, d] -> [heads, whole * tokens, d]
                        NDArray part = all.get(new NDIndex().addSliceDim(0, whole).addIndices(kv, l))
                                .transpose(2, 0, 1, 3).reshape(layout.kvHeads(), n, layout.headDim());
                        (kv == 0 ? keys : values)[l].set(into, part);
                    }
                }
            } finally {
                // the rearranging copies are queued on the GPU: one element back to the host
                // waits for them (failed or not) before the staging buffer they read is freed
                TensorViews.toFloat32(keys[0].get(new NDIndex().addIndices(0, 0, 0))).toFloatArray();
            }
            return n;
        }
    }
}
