package io.phxfs.kvcache;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * An inference engine's per-layer KV tensors, each {@code [batch, kvHeads, tokens, headDim]}
 * (row-major, as torch and transformers keep them), one key and one value tensor per layer for
 * {@link KvLayout.Kind#KV_2LTD}, one tensor per layer for {@link KvLayout.Kind#MLA}. One batch
 * row is stored or filled per call.
 *
 * <p>Gathering a chunk reads, for each tensor and head, the chunk's run of
 * {@code tokens * headDim} elements (contiguous in the tensor) and interleaves the heads into
 * the chunk's {@code [tokens, kvHeads * headDim]} rows; scattering does the reverse. Device
 * tensors go through a host copy of each run, since Phoenix has no device-side transpose: one
 * copy per (tensor, layer, head), {@code 2 * layers * kvHeads} per chunk.
 */
public final class KvTensors extends KvBuffer {
    private final List<RegisteredBuffer> keys;
    private final List<RegisteredBuffer> values;
    private final int batch;
    private final int batchIndex;
    private final int tokens;
    /** The prompt position of the tensors' token 0: a cache that continues a prefix held elsewhere starts past it. */
    private final int first;

    private KvTensors(KvLayout layout, List<RegisteredBuffer> keys, List<RegisteredBuffer> values,
                      int batch, int batchIndex, int tokens, int first) {
        super(layout);
        this.first = first;
        if (first < 0) {
            throw new IllegalArgumentException("KvTensors: first position " + first);
        }
        this.keys = List.copyOf(keys);
        this.values = values == null ? List.of() : List.copyOf(values);
        this.batch = batch;
        this.batchIndex = batchIndex;
        this.tokens = tokens;
        int want = layout.kind() == KvLayout.Kind.MLA ? 0 : layout.layers();
        if (this.keys.size() != layout.layers() || this.values.size() != want) {
            throw new IllegalArgumentException("KvTensors: " + layout.describe() + " needs " + layout.layers()
                    + " key tensors and " + want + " value tensors, got " + this.keys.size() + " and " + this.values.size());
        }
        if (batch <= 0 || batchIndex < 0 || batchIndex >= batch || tokens <= 0) {
            throw new IllegalArgumentException("KvTensors: batch index " + batchIndex + " of " + batch + ", "
                    + tokens + " tokens");
        }
        long want1 = (long) batch * layout.kvHeads() * tokens * layout.rowBytes();
        for (List<RegisteredBuffer> list : List.of(this.keys, this.values)) {
            for (int l = 0; l < list.size(); l++) {
                if (list.get(l).size() < want1) {
                    throw new IllegalArgumentException("KvTensors: tensor of layer " + l + " has " + list.get(l).size()
                            + " bytes; [" + batch + ", " + layout.kvHeads() + ", " + tokens + ", " + layout.headDim()
                            + "] " + layout.dtype().keyName() + " needs " + want1);
                }
            }
        }
    }

    /**
     * Per-layer key and value tensors of shape {@code [batch, kvHeads, tokens, headDim]}, host or
     * device memory (registered with Phoenix). The caller keeps owning them.
     *
     * @param layout     a {@link KvLayout.Kind#KV_2LTD} layout
     * @param keys       one key tensor per layer
     * @param values     one value tensor per layer
     * @param batch      the tensors' batch dimension
     * @param batchIndex the batch row this buffer reads and fills
     * @param tokens     the tensors' token dimension
     * @return the tensors as a {@link KvBuffer}
     */
    public static KvTensors of(KvLayout layout, List<RegisteredBuffer> keys, List<RegisteredBuffer> values,
                               int batch, int batchIndex, int tokens) {
        return new KvTensors(layout, keys, values, batch, batchIndex, tokens, 0);
    }

    /**
     * Like {@link #of}, for tensors whose token 0 is the prompt's position {@code first}: the
     * cache of a sequence that continues a prefix kept elsewhere (a serving engine's shared
     * prefix). Positions before {@code first} are not in these tensors: a store or retrieve
     * touching them fails for that chunk.
     *
     * @param layout     a {@link KvLayout.Kind#KV_2LTD} layout
     * @param keys       one key tensor per layer
     * @param values     one value tensor per layer
     * @param batch      the tensors' batch dimension
     * @param batchIndex the batch row this buffer reads and fills
     * @param tokens     the tensors' token dimension
     * @param first      the prompt position of their token 0
     * @return the tensors as a {@link KvBuffer} of positions {@code [first, first + tokens)}
     */
    public static KvTensors of(KvLayout layout, List<RegisteredBuffer> keys, List<RegisteredBuffer> values,
                               int batch, int batchIndex, int tokens, int first) {
        return new KvTensors(layout, keys, values, batch, batchIndex, tokens, first);
    }

    /**
     * Per-layer tensors of an {@link KvLayout.Kind#MLA} model, {@code [batch, kvHeads, tokens, headDim]}.
     *
     * @param layout     an MLA layout
     * @param latents    one tensor per layer
     * @param batch      the tensors' batch dimension
     * @param batchIndex the batch row this buffer reads and fills
     * @param tokens     the tensors' token dimension
     * @return the tensors as a {@link KvBuffer}
     */
    public static KvTensors mla(KvLayout layout, List<RegisteredBuffer> latents, int batch, int batchIndex, int tokens) {
        return new KvTensors(layout, latents, null, batch, batchIndex, tokens, 0);
    }

    @Override
    public int capacityTokens() {
        return first + tokens;
    }

    @Override
    int firstToken() {
        return first;
    }

    @Override
    void checkRange(int tokenStart, int n) {
        super.checkRange(tokenStart, n);
        if (tokenStart < first) {
            throw new IllegalArgumentException("tokens " + tokenStart + ".." + (tokenStart + n) + ": these tensors start at position "
                    + first);
        }
    }

    @Override
    public boolean isHost() {
        return keys.getFirst().segment().isPresent();
    }

    @Override
    MemorySegment hostChunk(int tokenStart, int n) {
        return null;
    }

    @Override
    RegisteredBuffer chunkBuffer() {
        return null;
    }

    @Override
    long chunkOffset(int tokenStart) {
        throw new UnsupportedOperationException("per-layer tensors hold no chunk contiguously");
    }

    private RegisteredBuffer tensor(int kv, int layer) {
        return kv == 0 ? keys.get(layer) : values.get(layer);
    }

    /** Byte offset of (head, prompt position) of this batch row in a tensor. */
    private long runOffset(int head, int token) {
        return (((long) batchIndex * layout.kvHeads() + head) * tokens + token - first) * layout.rowBytes();
    }

    /** Byte offset of (tensor kv, layer, token t of n, head) in a chunk of n tokens. */
    private long chunkRowOffset(int kv, int layer, int t, int n, int head) {
        long row = layout.rowBytes();
        return (((long) kv * layout.layers() + layer) * n + t) * layout.kvHeads() * row + head * row;
    }

    @Override
    void copyOut(int tokenStart, int n, MemorySegment dst) {
        checkRange(tokenStart, n);
        long row = layout.rowBytes();
        long runBytes = n * row;
        try (Arena arena = isHost() ? null : Arena.ofConfined()) {
            MemorySegment scratch = arena == null ? null : arena.allocate(runBytes, 64);
            for (int kv = 0; kv < layout.kind().tensorsPerLayer(); kv++) {
                for (int l = 0; l < layout.layers(); l++) {
                    RegisteredBuffer t = tensor(kv, l);
                    for (int h = 0; h < layout.kvHeads(); h++) {
                        long off = runOffset(h, tokenStart);
                        MemorySegment run;
                        if (scratch == null) {
                            run = t.segment().orElseThrow().asSlice(off, runBytes);
                        } else {
                            Phoenix.open().device(t.deviceId()).copyToHost(t, off, scratch);
                            run = scratch;
                        }
                        for (int i = 0; i < n; i++) {
                            MemorySegment.copy(run, i * row, dst, chunkRowOffset(kv, l, i, n, h), row);
                        }
                    }
                }
            }
        }
    }

    @Override
    void copyIn(MemorySegment src, int tokenStart, int n) {
        checkRange(tokenStart, n);
        long row = layout.rowBytes();
        long runBytes = n * row;
        try (Arena arena = isHost() ? null : Arena.ofConfined()) {
            MemorySegment scratch = arena == null ? null : arena.allocate(runBytes, 64);
            for (int kv = 0; kv < layout.kind().tensorsPerLayer(); kv++) {
                for (int l = 0; l < layout.layers(); l++) {
                    RegisteredBuffer t = tensor(kv, l);
                    for (int h = 0; h < layout.kvHeads(); h++) {
                        long off = runOffset(h, tokenStart);
                        MemorySegment run = scratch == null ? t.segment().orElseThrow().asSlice(off, runBytes) : scratch;
                        for (int i = 0; i < n; i++) {
                            MemorySegment.copy(src, chunkRowOffset(kv, l, i, n, h), run, i * row, row);
                        }
                        if (scratch != null) {
                            Phoenix.open().device(t.deviceId()).copyToDevice(scratch, t, off);
                        }
                    }
                }
            }
        }
    }

    @Override
    public String toString() {
        return "KvTensors[" + layout.describe() + ", batch " + batchIndex + "/" + batch + ", " + tokens + " tokens"
                + (first == 0 ? "" : " from position " + first) + ", "
                + (isHost() ? "host" : "device " + keys.getFirst().deviceId()) + "]";
    }
}
