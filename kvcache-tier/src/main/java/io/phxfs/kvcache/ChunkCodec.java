package io.phxfs.kvcache;

import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.ToByteBufEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Keys as UTF-8 strings; values written as a {@link Value} (header and payload, copied once into
 * Netty's buffer, with no byte[] of the whole entry in between) or a byte[], and read as byte[].
 */
final class ChunkCodec implements RedisCodec<String, Object>, ToByteBufEncoder<String, Object> {
    /** A chunk entry: its 4 KiB header, then the payload in host memory. */
    record Value(byte[] header, MemorySegment payload) {
    }

    @Override
    public String decodeKey(ByteBuffer bytes) {
        return StandardCharsets.UTF_8.decode(bytes).toString();
    }

    @Override
    public Object decodeValue(ByteBuffer bytes) {
        byte[] b = new byte[bytes.remaining()];
        bytes.get(b);
        return b;
    }

    @Override
    public ByteBuffer encodeKey(String key) {
        return StandardCharsets.UTF_8.encode(key);
    }

    @Override
    public ByteBuffer encodeValue(Object value) {
        if (value instanceof byte[] b) {
            return ByteBuffer.wrap(b);
        }
        Value v = (Value) value;
        ByteBuffer out = ByteBuffer.allocate((int) (v.header().length + v.payload().byteSize()));
        out.put(v.header()).put(v.payload().asByteBuffer()).flip();
        return out;
    }

    @Override
    public void encodeKey(String key, ByteBuf target) {
        target.writeCharSequence(key, StandardCharsets.UTF_8);
    }

    @Override
    public void encodeValue(Object value, ByteBuf target) {
        if (value instanceof byte[] b) {
            target.writeBytes(b);
            return;
        }
        Value v = (Value) value;
        target.ensureWritable((int) (v.header().length + v.payload().byteSize())); // one growth, not one per write
        target.writeBytes(v.header());
        target.writeBytes(v.payload().asByteBuffer());
    }

    @Override
    public int estimateSize(Object keyOrValue) {
        if (keyOrValue instanceof String s) {
            return ByteBufUtil.utf8Bytes(s);
        }
        if (keyOrValue instanceof byte[] b) {
            return b.length;
        }
        Value v = (Value) keyOrValue;
        return (int) (v.header().length + v.payload().byteSize());
    }

    @Override
    public boolean isEstimateExact() {
        // exact, so that Lettuce writes the bulk length first and then the value straight into
        // its outbound buffer; with an estimate it encodes into a temporary buffer of the whole
        // value first and copies that (a second 32 MiB copy and a fresh allocation per chunk)
        return true;
    }
}
