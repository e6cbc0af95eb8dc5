package io.phxfs.kvcache;

import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;

/** Prompts whose chunks hold bytes seeded by their chained hashes, and the check of what came back. */
final class ClusterChunks {
    static final KvLayout L = KvLayout.preset("tiny-llama"); // 64 KiB per 256-token chunk
    static final int CHUNK = 256;

    private ClusterChunks() {
    }

    /** Fills the first {@code tokens.length} tokens' chunks of {@code buf} with their expected bytes. */
    static void fill(RegisteredBuffer buf, int[] tokens) {
        long per = L.bytesPerChunk(CHUNK);
        for (int i = 0; i < tokens.length / CHUNK; i++) {
            TestData.fill(buf.segment().orElseThrow().asSlice(i * per, per), TestData.seedOf(tokens, i, CHUNK));
        }
    }

    /**
     * The first byte of the first {@code filled} tokens that differs from what was stored, or -1.
     */
    static long mismatch(RegisteredBuffer buf, int[] tokens, int filled) {
        long per = L.bytesPerChunk(CHUNK);
        MemorySegment want = java.lang.foreign.Arena.ofAuto().allocate(per);
        for (int i = 0; i < filled / CHUNK; i++) {
            TestData.fill(want, TestData.seedOf(tokens, i, CHUNK));
            long m = buf.segment().orElseThrow().asSlice(i * per, per).mismatch(want);
            if (m >= 0) {
                return i * per + m;
            }
        }
        return -1;
    }
}
