package io.phxfs.kvcache;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The 4 KiB header of a chunk file (and of a Redis entry), little-endian:
 * <pre>
 *   0  magic "PHXKVC" 0x00 0x01     8 bytes
 *   8  version                      u32 (1)
 *  12  CRC32C of the header with this field zero
 *  16  payload length               u64
 *  24  CRC32C of the payload        u32
 *  28  tokens in the chunk          u32
 *  32  layers, kvHeads, headDim     3 x u32
 *  44  dtype, kind                  2 x u32 (enum ordinals)
 *  52  key length                   u32
 *  56  key, UTF-8 (LMCache's string form)
 * </pre>
 * The payload starts at byte 4096, so that O_DIRECT applies to it.
 *
 * @param key        the chunk's key string
 * @param payloadLen payload bytes
 * @param payloadCrc CRC32C of the payload
 * @param tokens     tokens in the chunk
 * @param layout     the payload's layout
 */
record ChunkFileHeader(String key, long payloadLen, int payloadCrc, int tokens, KvLayout layout) {
    static final int SIZE = 4096;
    static final int VERSION = 1;
    private static final long MAGIC = 0x0100_4356_4B58_4850L; // "PHXKVC\0\1" read little-endian
    private static final int KEY_AT = 56;
    static final int MAX_KEY_BYTES = SIZE - KEY_AT;

    /** Writes the header into the first {@link #SIZE} bytes of {@code dst}. */
    void encode(MemorySegment dst) {
        ByteBuffer b = dst.asSlice(0, SIZE).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("cache key of " + k.length + " bytes; at most " + MAX_KEY_BYTES);
        }
        for (int i = 0; i < SIZE; i += 8) {
            b.putLong(i, 0);
        }
        b.putLong(0, MAGIC).putInt(8, VERSION).putInt(12, 0).putLong(16, payloadLen).putInt(24, payloadCrc)
                .putInt(28, tokens).putInt(32, layout.layers()).putInt(36, layout.kvHeads()).putInt(40, layout.headDim())
                .putInt(44, layout.dtype().ordinal()).putInt(48, layout.kind().ordinal()).putInt(52, k.length);
        b.put(KEY_AT, k);
        b.putInt(12, crc(b));
    }

    private static int crc(ByteBuffer b) {
        CRC32C c = new CRC32C();
        c.update(b.duplicate().position(0).limit(SIZE));
        return (int) c.getValue();
    }

    /**
     * Reads a header; a reason it is not one, as an IllegalArgumentException's message.
     *
     * @throws IllegalArgumentException saying what is wrong (magic, version, checksum, fields)
     */
    static ChunkFileHeader decode(ByteBuffer in) {
        if (in.remaining() < SIZE) {
            throw new IllegalArgumentException("header truncated (" + in.remaining() + " of " + SIZE + " bytes)");
        }
        ByteBuffer b = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        b.limit(b.position() + SIZE);
        b = b.slice().order(ByteOrder.LITTLE_ENDIAN);
        if (b.getLong(0) != MAGIC) {
            throw new IllegalArgumentException("not a Phoenix KV chunk (bad magic)");
        }
        if (b.getInt(8) != VERSION) {
            throw new IllegalArgumentException("format version " + b.getInt(8) + ", this reader knows " + VERSION);
        }
        int stored = b.getInt(12);
        ByteBuffer copy = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN).put(b.duplicate().clear());
        copy.putInt(12, 0);
        if (crc(copy) != stored) {
            throw new IllegalArgumentException("header checksum mismatch (torn or damaged header)");
        }
        int keyLen = b.getInt(52);
        if (keyLen <= 0 || keyLen > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("key length " + keyLen + " out of range");
        }
        KvLayout.DType[] dts = KvLayout.DType.values();
        KvLayout.Kind[] kinds = KvLayout.Kind.values();
        int dt = b.getInt(44);
        int kind = b.getInt(48);
        if (dt < 0 || dt >= dts.length || kind < 0 || kind >= kinds.length) {
            throw new IllegalArgumentException("unknown dtype " + dt + " or kind " + kind);
        }
        KvLayout layout = new KvLayout(b.getInt(32), b.getInt(36), b.getInt(40), dts[dt], kinds[kind]);
        long len = b.getLong(16);
        int tokens = b.getInt(28);
        if (tokens <= 0 || len != layout.bytesPerChunk(tokens)) {
            throw new IllegalArgumentException("payload length " + len + " does not match " + tokens + " tokens of "
                    + layout.describe());
        }
        byte[] k = new byte[keyLen];
        b.get(KEY_AT, k);
        return new ChunkFileHeader(new String(k, StandardCharsets.UTF_8), len, b.getInt(24), tokens, layout);
    }

    /** CRC32C of a host segment (intrinsified: several GB/s). */
    static int crc(MemorySegment payload) {
        CRC32C c = new CRC32C();
        long off = 0;
        long n = payload.byteSize();
        while (off < n) {
            long len = Math.min(n - off, 1L << 30);
            c.update(payload.asSlice(off, len).asByteBuffer());
            off += len;
        }
        return (int) c.getValue();
    }
}
