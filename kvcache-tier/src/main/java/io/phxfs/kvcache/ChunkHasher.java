package io.phxfs.kvcache;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Cuts tokens into chunks and gives each chunk its chained prefix hash
 * {@code h_i = SHA-256(h_{i-1} || tokens of chunk i || extra)}, with {@code h_{-1}} 32 zero bytes
 * and each token a little-endian 32-bit integer. The hash depends only on those bytes: the same
 * prefix gives the same hashes in every process and on every machine (LMCache's default, Python's
 * {@code hash}, needs PYTHONHASHSEED to agree).
 *
 * <p>Not thread-safe (it keeps a digest); cheap to create.
 */
public final class ChunkHasher {
    /** Hash length in bytes. */
    public static final int HASH_BYTES = 32;
    private static final HexFormat HEX = HexFormat.of();

    private final int chunkSize;
    private final byte[] extra;
    private final MessageDigest sha;
    private byte[] scratch = new byte[0];

    /**
     * A hasher for chunks of {@code chunkSize} tokens.
     *
     * @param chunkSize tokens per chunk, {@code > 0}
     * @param extra     extra key bytes mixed into every chunk (a LoRA id, a multimodal hash); may be empty
     */
    public ChunkHasher(int chunkSize, byte[] extra) {
        if (chunkSize <= 0) {
            throw new IllegalArgumentException("chunk size must be > 0, was " + chunkSize);
        }
        this.chunkSize = chunkSize;
        this.extra = extra == null ? new byte[0] : extra.clone();
        try {
            this.sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e);
        }
    }

    /**
     * Tokens per chunk.
     *
     * @return the chunk size
     */
    public int chunkSize() {
        return chunkSize;
    }

    /**
     * Number of chunks {@code tokens} tokens give.
     *
     * @param tokens   token count
     * @param withPartial whether a partial last chunk counts
     * @return chunk count
     */
    public int chunks(int tokens, boolean withPartial) {
        return withPartial ? (tokens + chunkSize - 1) / chunkSize : tokens / chunkSize;
    }

    /**
     * The chained hashes of the first {@code n} chunks of {@code tokens}; the last one may be
     * partial when {@code n} counts it.
     *
     * @param tokens the prompt's token ids
     * @param n      chunks to hash, at most {@code chunks(tokens.length, true)}
     * @return {@code n} hashes of {@link #HASH_BYTES} bytes
     */
    public byte[][] hashes(int[] tokens, int n) {
        if (n < 0 || n > chunks(tokens.length, true)) {
            throw new IllegalArgumentException(n + " chunks asked of " + tokens.length + " tokens");
        }
        byte[][] out = new byte[n][];
        byte[] prev = new byte[HASH_BYTES];
        for (int i = 0; i < n; i++) {
            int from = i * chunkSize;
            int len = Math.min(chunkSize, tokens.length - from);
            if (scratch.length < len * 4) {
                scratch = new byte[chunkSize * 4];
            }
            java.nio.ByteBuffer.wrap(scratch).order(java.nio.ByteOrder.LITTLE_ENDIAN).asIntBuffer().put(tokens, from, len);
            sha.update(prev);
            sha.update(scratch, 0, len * 4);
            sha.update(extra);
            prev = sha.digest();
            out[i] = prev;
        }
        return out;
    }

    /**
     * Lower-case hex of a hash, as it appears in a key string.
     *
     * @param hash the hash
     * @return its hex form
     */
    public static String hex(byte[] hash) {
        return HEX.formatHex(hash);
    }
}
