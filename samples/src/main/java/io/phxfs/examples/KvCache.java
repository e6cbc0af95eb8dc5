package io.phxfs.examples;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.kvcache.ChunkedKv;
import io.phxfs.kvcache.KvCacheConfig;
import io.phxfs.kvcache.KvCacheEngine;
import io.phxfs.kvcache.KvLayout;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Random;

/** Stores a prompt's KV cache in memory and on disk, then finds and retrieves it again. */
public final class KvCache {
    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: KvCache DIR");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);                        // the disk tier's directory
        KvLayout layout = KvLayout.preset("tiny-llama");    // 2 layers, 2 KV heads, head dim 16, bf16
        KvCacheConfig config = KvCacheConfig.builder()      // or KvCacheConfig.load(Path.of("kv.yaml"))
                .maxLocalCpuBytes(64 << 20)                 // memory tier: allocated once, LRU
                .localDisk(dir).maxLocalDiskBytes(1L << 30) // disk tier: one checked file per chunk
                .build();
        int[] prompt = new Random(1).ints(512, 0, 32000).toArray(); // two chunks of 256 tokens
        long bytes = layout.bytesPerChunk(prompt.length);
        try (KvCacheEngine kv = new KvCacheEngine(config, layout);
             RegisteredBuffer src = Phoenix.open().host().allocate(bytes);   // or device memory
             RegisteredBuffer dst = Phoenix.open().host().allocate(bytes)) {
            MemorySegment s = src.segment().orElseThrow();
            for (long i = 0; i < bytes; i++) {
                s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) i); // stands in for prefill's output
            }
            // chunks side by side in stored layout; KvTensors takes per-layer [B, H, T, D] tensors instead
            int stored = kv.store(prompt, new ChunkedKv(src, layout, 256));
            int held = kv.lookup(prompt);
            int filled = kv.retrieve(prompt, new ChunkedKv(dst, layout, 256));
            boolean same = s.mismatch(dst.segment().orElseThrow()) == -1;
            System.out.println("stored " + stored + ", held " + held + ", retrieved " + filled + " tokens, "
                    + (same ? "bytes equal" : "bytes DIFFER"));
            System.out.println(kv.metrics().tier("memory"));
        }
    }
}
