package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/** Building safetensors files byte by byte, valid or not. Shared with the CLI tests. */
public final class TestFiles {
    private TestFiles() {
    }

    /** length prefix + header bytes + data, exactly as given (no padding, no checks). */
    public static byte[] raw(long headerLength, byte[] header, byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        return b.putLong(headerLength).put(header).put(data).array();
    }

    /** A file of this header text (its true length) and {@code dataBytes} pattern bytes. */
    public static byte[] withHeader(String json, int dataBytes) {
        byte[] h = json.getBytes(StandardCharsets.UTF_8);
        return raw(h.length, h, pattern(dataBytes, 7));
    }

    public static Path write(Path file, byte[] bytes) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        return Files.write(file, bytes);
    }

    /** Deterministic pseudo-random bytes. */
    public static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < n; ) {
            long v = r.nextLong();
            for (int k = 0; k < 8 && i < n; k++, v >>>= 8) {
                b[i++] = (byte) v;
            }
        }
        return b;
    }

    /** A valid file with these tensors, filled with bytes that depend on name and position. */
    public static Path valid(Path file, Map<String, String> metadata, List<SafetensorsWriter.Spec> tensors)
            throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        SafetensorsWriter.write(file, metadata, tensors, TestFiles::fill);
        return file;
    }

    /** The filler of {@link #valid}: byte i of tensor t is a hash of (t, i). */
    public static void fill(SafetensorsWriter.Spec t, long offset, ByteBuffer dst) {
        long h = t.name().hashCode() * 0x9E3779B97F4A7C15L;
        for (long i = offset; dst.hasRemaining(); i++) {
            dst.put(expectedByte(h, i));
        }
    }

    /** Byte {@code i} of the tensor named {@code name} in a {@link #valid} file. */
    public static byte expected(String name, long i) {
        return expectedByte(name.hashCode() * 0x9E3779B97F4A7C15L, i);
    }

    private static byte expectedByte(long h, long i) {
        long x = (h + i) * 0xBF58476D1CE4E5B9L;
        return (byte) (x ^ (x >>> 29) ^ (x >>> 47));
    }

    public static SafetensorsWriter.Spec spec(String name, Dtype dtype, long... shape) {
        return new SafetensorsWriter.Spec(name, dtype, shape);
    }
}
