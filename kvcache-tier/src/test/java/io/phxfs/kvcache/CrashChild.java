package io.phxfs.kvcache;

import io.phxfs.core.RegisteredBuffer;
import java.nio.file.Path;

/**
 * The child JVM of {@link CrashSafetyTest}: stores prompts into a disk tier in a loop, printing
 * "stored N" after each, until it is killed.
 */
public final class CrashChild {
    static final KvLayout LAYOUT = new KvLayout(4, 8, 128, KvLayout.DType.BFLOAT16, KvLayout.Kind.KV_2LTD);
    static final int CHUNK = 256;

    private CrashChild() {
    }

    static KvCacheConfig config(Path dir, DiskTier.FsyncPolicy fsync) {
        return KvCacheConfig.builder().localCpu(false).localDisk(dir).maxLocalDiskBytes(256L << 20)
                .diskMinFreeBytes(0).fsync(fsync).model("crash").ioThreads(2).build();
    }

    /**
     * Stores prompts {@code first}, {@code first + 1}, ... forever.
     *
     * @param args the cache directory, the first prompt's number and the fsync policy
     */
    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        long first = Long.parseLong(args[1]);
        DiskTier.FsyncPolicy fsync = DiskTier.FsyncPolicy.valueOf(args[2]);
        int tokensPer = 2 * CHUNK;
        try (KvCacheEngine e = new KvCacheEngine(config(dir, fsync), LAYOUT);
             RegisteredBuffer buf = TestData.PHX.host().allocate(LAYOUT.bytesPerChunk(tokensPer))) {
            ChunkedKv kv = new ChunkedKv(buf, LAYOUT, CHUNK);
            for (long i = first; ; i++) {
                int[] tokens = TestData.tokens(tokensPer, i);
                for (int c = 0; c < 2; c++) {
                    TestData.fill(buf.segment().orElseThrow().asSlice(c * LAYOUT.bytesPerChunk(CHUNK),
                            LAYOUT.bytesPerChunk(CHUNK)), TestData.seedOf(tokens, c, CHUNK));
                }
                int n = e.store(tokens, kv);
                System.out.println("stored " + i + " " + n);
                System.out.flush();
            }
        }
    }
}
