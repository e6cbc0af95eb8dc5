package io.phxfs.kvcache;

import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;

/**
 * Where the engine takes a prompt's KV cache from ({@link KvCacheEngine#store}) and puts it
 * back ({@link KvCacheEngine#retrieve}): host memory or device memory, in one of two shapes.
 * <ul>
 * <li>{@link ChunkedKv}: the chunks side by side in their stored layout (a paged KV pool whose
 *     block is a chunk); moved without rearranging.</li>
 * <li>{@link KvTensors}: the per-layer {@code [batch, kvHeads, tokens, headDim]} tensors of an
 *     inference engine; each chunk is gathered from them and scattered back.</li>
 * </ul>
 */
public abstract sealed class KvBuffer permits ChunkedKv, KvTensors {
    final KvLayout layout;

    KvBuffer(KvLayout layout) {
        this.layout = layout;
    }

    /**
     * The layout of the cache this buffer holds.
     *
     * @return the layout
     */
    public KvLayout layout() {
        return layout;
    }

    /**
     * How many tokens the buffer has room for.
     *
     * @return the capacity in tokens
     */
    public abstract int capacityTokens();

    /**
     * Whether the bytes are in host memory (else device memory, reached through Phoenix).
     *
     * @return true for host memory
     */
    public abstract boolean isHost();

    /**
     * The chunk's bytes in stored layout as a host segment, when the buffer holds them so
     * (a host {@link ChunkedKv}); null when they have to be gathered or staged.
     */
    abstract MemorySegment hostChunk(int tokenStart, int tokens);

    /** The registered buffer and offset of the chunk in stored layout, when it holds it contiguously; else null. */
    abstract RegisteredBuffer chunkBuffer();

    /** Offset of a chunk in {@link #chunkBuffer()}. */
    abstract long chunkOffset(int tokenStart);

    /**
     * The first prompt position the buffer holds: 0, but for tensors that continue a prefix
     * kept elsewhere ({@link KvTensors#of(KvLayout, java.util.List, java.util.List, int, int, int, int)}).
     * A store skips the chunks before it.
     */
    int firstToken() {
        return 0;
    }

    /** Copies tokens [tokenStart, tokenStart + tokens) out in stored layout into the host segment {@code dst}. */
    abstract void copyOut(int tokenStart, int tokens, MemorySegment dst);

    /** Copies a chunk in stored layout from the host segment {@code src} into tokens [tokenStart, tokenStart + tokens). */
    abstract void copyIn(MemorySegment src, int tokenStart, int tokens);

    void checkRange(int tokenStart, int tokens) {
        if (tokenStart < 0 || tokens < 0 || (long) tokenStart + tokens > capacityTokens()) {
            throw new IllegalArgumentException("tokens " + tokenStart + ".." + (tokenStart + tokens)
                    + " outside a buffer of " + capacityTokens() + " tokens");
        }
    }
}
