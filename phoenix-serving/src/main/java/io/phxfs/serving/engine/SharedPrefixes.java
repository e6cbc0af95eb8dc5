package io.phxfs.serving.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.djl.KvPrefix;
import io.phxfs.djl.TensorViews;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvTensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Prompt prefixes whose KV the running requests share, one block per prefix (SGLang's radix
 * sharing and vLLM's cascade attention, at whole-chunk granularity): a request whose prompt
 * starts with a resident block's tokens, under the same model identity, layout and cache salt,
 * uses the block instead of a copy of its own; the first such request fills the block from the
 * KV tier. Decode steps then read a shared prefix once for all its requests
 * ({@link KvPrefix}).
 *
 * <p>A block lives while a request uses it, and after the last one ends it stays resident, idle,
 * as vLLM keeps freed prefix blocks in its GPU cache: the next request with that prefix joins it
 * instead of reading the chunks from a tier again (an 8,000-token prefix of an 8B model is 1.1 GB
 * of KV, 0.5-0.8 s from a virtio disk). Idle blocks are bounded by a byte budget, least recently
 * released first out, and all of them are let go when an allocation fails (a running request's
 * cache always comes before an idle prefix). Used only by the engine's thread.
 */
final class SharedPrefixes implements AutoCloseable {
    private final KvMemory memory;
    private final CausalLmBlock model;
    private final NDManager parent;
    private final KvLayout layout;
    private final int chunk;
    private final Map<Key, Block> blocks = new HashMap<>();
    /** The resident blocks no request uses, least recently released first. */
    private final Map<Key, Block> idle = new LinkedHashMap<>();
    /** Bytes that idle blocks may hold; 0 frees a block when its last request ends. */
    private final long idleBudget;
    private long idleBytes;
    /** Blocks made and filled from the tier; uses of a block already resident; idle blocks let go. */
    private long filled;
    private long joined;
    private long evicted;

    SharedPrefixes(KvMemory memory, CausalLmBlock model, NDManager parent, KvLayout layout, int chunk, long idleBudget) {
        if (idleBudget < 0) {
            throw new IllegalArgumentException("idle prefix budget must be at least 0, was " + idleBudget);
        }
        this.idleBudget = idleBudget;
        this.memory = memory;
        this.model = model;
        this.parent = parent;
        this.layout = layout;
        this.chunk = chunk;
    }

    /** What a block is the KV of: the tier's key bytes (model identity, layout, salt) and the tokens. */
    private record Key(byte[] extra, int[] tokens) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && Arrays.equals(extra, k.extra) && Arrays.equals(tokens, k.tokens);
        }

        @Override
        public int hashCode() {
            return 31 * Arrays.hashCode(extra) + Arrays.hashCode(tokens);
        }
    }

    /** One shared prefix: per layer a key and a value buffer {@code [kv_heads, P, head_dim]}. */
    final class Block {
        private final Key key;
        private final List<RegisteredBuffer> buffers = new ArrayList<>();
        private final NDManager manager;
        private final KvTensors tensors;
        /** Device or host bytes the block holds: every layer's keys and values. */
        private final long bytes;
        private KvPrefix prefix;
        private NDArray[] keyArrays;
        private NDArray[] valueArrays;
        private int users;

        private Block(Key key) {
            this.key = key;
            this.manager = parent.newSubManager();
            int p = key.tokens.length;
            long bytes = (long) model.kvHeads() * p * model.headDim() * model.dtype().getNumOfBytes();
            this.bytes = 2L * model.layers() * bytes;
            List<RegisteredBuffer> keys = new ArrayList<>();
            List<RegisteredBuffer> values = new ArrayList<>();
            try {
                for (int i = 0; i < model.layers(); i++) {
                    keys.add(track(memory.allocate(bytes)));
                    values.add(track(memory.allocate(bytes)));
                }
                this.tensors = KvTensors.of(layout, keys, values, 1, 0, p);
            } catch (RuntimeException e) {
                free();
                throw e;
            }
        }

        private RegisteredBuffer track(RegisteredBuffer b) {
            buffers.add(b);
            return b;
        }

        /** The model's view of the buffers, once the tier has filled them. */
        private void seal() {
            Shape shape = new Shape(model.kvHeads(), key.tokens.length, model.headDim());
            NDArray[] k = new NDArray[model.layers()];
            NDArray[] v = new NDArray[model.layers()];
            for (int i = 0; i < k.length; i++) {
                k[i] = TensorViews.view(buffers.get(2 * i), shape, model.dtype(), manager);
                v[i] = TensorViews.view(buffers.get(2 * i + 1), shape, model.dtype(), manager);
            }
            keyArrays = k;
            valueArrays = v;
            prefix = model.newPrefix(k, v);
        }

        /** Fills the block from the tier: straight into host memory, or whole chunks to the GPU rearranged there. */
        private int fill(PrefixCache tier, byte[] extra) {
            if (memory.onDevice()) {
                return DeviceChunkFill.fill(tier, key.tokens, extra, layout, memory, keyArrays, valueArrays, model.dtype(), manager);
            }
            return tier.retrieve(key.tokens, extra, tensors);
        }

        KvPrefix prefix() {
            return prefix;
        }

        int length() {
            return key.tokens.length;
        }

        /**
         * A request is done with the block; after the last one it stays idle within the budget
         * (else it is freed). A second call for the same use is a bug.
         */
        void release() {
            if (users <= 0) {
                throw new IllegalStateException("a shared prefix released more often than used");
            }
            if (--users > 0) {
                return;
            }
            if (bytes > idleBudget) {
                blocks.remove(key, this);
                free();
                return;
            }
            idle.put(key, this);
            idleBytes += bytes;
            trimIdle(idleBudget);
        }

        private void free() {
            manager.close();
            buffers.forEach(RegisteredBuffer::close);
            buffers.clear();
        }
    }

    /**
     * The block for the first {@code tokens} positions of {@code prompt}, taken for one more
     * request: the resident one, or a new one the tier fills. Null when the tier cannot give
     * them (the request then retrieves and prefills on its own).
     *
     * @param prompt the request's prompt
     * @param tokens whole chunks the tier holds at its start
     * @param extra the tier's key bytes for this request
     * @param tier the tier to fill a new block from
     */
    Block acquire(int[] prompt, int tokens, byte[] extra, PrefixCache tier) {
        if (tokens <= 0 || tokens % chunk != 0) {
            return null;
        }
        Key key = new Key(extra, Arrays.copyOf(prompt, tokens));
        Block b = blocks.get(key);
        if (b == null) {
            try {
                b = newBlock(key);
            } catch (RuntimeException | OutOfMemoryError e) {
                // no memory for a block now, even without the idle ones: the request fills a
                // cache of its own instead
                return null;
            }
            int got;
            try {
                b.seal();
                got = b.fill(tier, extra);
            } catch (RuntimeException | Error e) {
                b.free();
                if (e instanceof Error err && !(err instanceof OutOfMemoryError)) {
                    throw err;
                }
                return null;
            }
            if (got < tokens) {
                // the tier lost chunks since its lookup: no block of a shorter length is made,
                // the request fills its own cache instead
                b.free();
                return null;
            }
            blocks.put(key, b);
            filled++;
        } else {
            if (b.users == 0) {
                idle.remove(key);
                idleBytes -= b.bytes;
            }
            joined++;
        }
        b.users++;
        return b;
    }

    private Block newBlock(Key key) {
        try {
            return new Block(key);
        } catch (RuntimeException | OutOfMemoryError e) {
            if (!evictIdle()) {
                throw e;
            }
            return new Block(key);
        }
    }

    /** Frees every idle block (an allocation failed); whether there was one. */
    boolean evictIdle() {
        boolean any = !idle.isEmpty();
        trimIdle(0);
        return any;
    }

    private void trimIdle(long limit) {
        Iterator<Block> it = idle.values().iterator();
        while (idleBytes > limit && it.hasNext()) {
            Block b = it.next();
            it.remove();
            idleBytes -= b.bytes;
            blocks.remove(b.key, b);
            b.free();
            evicted++;
        }
    }

    /**
     * Prefixes resident now, blocks filled so far, the times a request joined a resident one,
     * idle blocks now, their bytes, and idle blocks let go so far.
     */
    long[] counts() {
        return new long[] {blocks.size(), filled, joined, idle.size(), idleBytes, evicted};
    }

    @Override
    public void close() {
        for (Block b : List.copyOf(blocks.values())) {
            b.free();
        }
        blocks.clear();
        idle.clear();
        idleBytes = 0;
    }
}
