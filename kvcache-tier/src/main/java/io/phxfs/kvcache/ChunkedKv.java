package io.phxfs.kvcache;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;

/**
 * Chunks side by side in their stored layout: chunk {@code i} (tokens {@code i * chunkSize} on)
 * starts at byte {@code i * layout.bytesPerChunk(chunkSize)} of the buffer, a partial last chunk
 * is {@code layout.bytesPerChunk(rest)} bytes. The buffer may be host memory or device memory;
 * the engine moves its chunks without rearranging (device memory through Phoenix copies).
 */
public final class ChunkedKv extends KvBuffer {
    private final RegisteredBuffer buffer;
    private final int chunkSize;
    private final long chunkBytes;
    private final int capacity;

    /**
     * Views {@code buffer} as chunks. The caller keeps owning the buffer.
     *
     * @param buffer    host or device memory
     * @param layout    the cache's layout
     * @param chunkSize tokens per chunk, as the engine's
     */
    public ChunkedKv(RegisteredBuffer buffer, KvLayout layout, int chunkSize) {
        super(layout);
        if (chunkSize <= 0) {
            throw new IllegalArgumentException("chunk size must be > 0, was " + chunkSize);
        }
        this.buffer = buffer;
        this.chunkSize = chunkSize;
        this.chunkBytes = layout.bytesPerChunk(chunkSize);
        long full = buffer.size() / chunkBytes;
        long rest = (buffer.size() - full * chunkBytes) / layout.bytesPerToken();
        this.capacity = (int) Math.min(Integer.MAX_VALUE, full * chunkSize + rest);
    }

    /**
     * Tokens per chunk of this buffer.
     *
     * @return the chunk size
     */
    public int chunkSize() {
        return chunkSize;
    }

    /**
     * The buffer viewed.
     *
     * @return the caller's buffer
     */
    public RegisteredBuffer buffer() {
        return buffer;
    }

    @Override
    public int capacityTokens() {
        return capacity;
    }

    @Override
    public boolean isHost() {
        return buffer.segment().isPresent();
    }

    @Override
    MemorySegment hostChunk(int tokenStart, int tokens) {
        checkRange(tokenStart, tokens);
        var seg = buffer.segment();
        if (seg.isEmpty()) {
            return null;
        }
        return seg.get().asSlice(chunkOffset(tokenStart), layout.bytesPerChunk(tokens));
    }

    @Override
    RegisteredBuffer chunkBuffer() {
        return buffer;
    }

    @Override
    long chunkOffset(int tokenStart) {
        if (tokenStart % chunkSize != 0) {
            throw new IllegalArgumentException("token " + tokenStart + " does not start a chunk of " + chunkSize);
        }
        return (long) (tokenStart / chunkSize) * chunkBytes;
    }

    @Override
    void copyOut(int tokenStart, int tokens, MemorySegment dst) {
        MemorySegment src = hostChunk(tokenStart, tokens);
        if (src != null) {
            MemorySegment.copy(src, 0, dst, 0, src.byteSize());
        } else {
            Phoenix.open().device(buffer.deviceId())
                    .copyToHost(buffer, chunkOffset(tokenStart), dst.asSlice(0, layout.bytesPerChunk(tokens)));
        }
    }

    @Override
    void copyIn(MemorySegment src, int tokenStart, int tokens) {
        MemorySegment dst = hostChunk(tokenStart, tokens);
        long n = layout.bytesPerChunk(tokens);
        if (dst != null) {
            MemorySegment.copy(src, 0, dst, 0, n);
        } else {
            Phoenix.open().device(buffer.deviceId()).copyToDevice(src.asSlice(0, n), buffer, chunkOffset(tokenStart));
        }
    }

    @Override
    public String toString() {
        return "ChunkedKv[" + buffer + ", " + layout.describe() + ", chunk " + chunkSize + "]";
    }
}
