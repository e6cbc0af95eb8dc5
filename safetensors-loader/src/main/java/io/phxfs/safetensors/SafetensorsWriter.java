package io.phxfs.safetensors;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.phxfs.core.FileOperationException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Writes safetensors files: tensors laid out back to back in the order given, the header
 * padded with spaces to a multiple of 8 bytes as upstream writers do. Used to generate test
 * models and benchmark inputs.
 */
public final class SafetensorsWriter {
    private static final int CHUNK = 8 << 20;

    /**
     * A tensor to write.
     *
     * @param name the tensor's name
     * @param dtype the element type
     * @param shape the dimensions; copied
     */
    public record Spec(String name, Dtype dtype, long[] shape) {
        /** Copies {@code shape}, so that the caller's array may change. */
        public Spec {
            shape = shape.clone();
        }

        /**
         * The number of elements.
         *
         * @return the product of the dimensions
         * @throws ArithmeticException when the product overflows a long
         */
        public long numel() {
            long n = 1;
            for (long d : shape) {
                n = Math.multiplyExact(n, d);
            }
            return n;
        }

        /**
         * The tensor's size.
         *
         * @return the size in bytes
         */
        public long nbytes() {
            return dtype.bytesFor(numel());
        }

        /**
         * The dimensions.
         *
         * @return a copy of the shape
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Spec s && name.equals(s.name) && dtype == s.dtype && Arrays.equals(shape, s.shape);
        }

        @Override
        public int hashCode() {
            return name.hashCode();
        }

        @Override
        public String toString() {
            return name + " " + dtype + Arrays.toString(shape);
        }
    }

    /** Produces a tensor's bytes: fill {@code dst} (to its limit) with the bytes from {@code offset} on. */
    @FunctionalInterface
    public interface Filler {
        /**
         * Fills {@code dst} from its position to its limit.
         *
         * @param tensor the tensor whose bytes are wanted
         * @param offset the offset in the tensor's data of the first byte to put in {@code dst}
         * @param dst the buffer to fill
         */
        void fill(Spec tensor, long offset, ByteBuffer dst);
    }

    private SafetensorsWriter() {
    }

    /**
     * The 8-byte length and the padded JSON header for these tensors, laid out in this order.
     *
     * @param metadata the {@code __metadata__} entries, or null for none
     * @param tensors the tensors, in the order of their data
     * @return the header bytes as they start the file
     */
    public static byte[] header(Map<String, String> metadata, List<Spec> tensors) {
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        try (JsonGenerator g = new JsonFactory().createGenerator(json)) {
            g.writeStartObject();
            if (metadata != null && !metadata.isEmpty()) {
                g.writeObjectFieldStart(HeaderJson.METADATA);
                for (Map.Entry<String, String> e : metadata.entrySet()) {
                    g.writeStringField(e.getKey(), e.getValue());
                }
                g.writeEndObject();
            }
            long off = 0;
            for (Spec t : tensors) {
                g.writeObjectFieldStart(t.name());
                g.writeStringField("dtype", t.dtype().headerName());
                g.writeArrayFieldStart("shape");
                for (long d : t.shape) {
                    g.writeNumber(d);
                }
                g.writeEndArray();
                long end = off + t.nbytes();
                g.writeArrayFieldStart("data_offsets");
                g.writeNumber(off);
                g.writeNumber(end);
                g.writeEndArray();
                g.writeEndObject();
                off = end;
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int n = json.size();
        int padded = (n + 7) & ~7;
        ByteBuffer b = ByteBuffer.allocate(SafetensorsHeader.LENGTH_PREFIX + padded).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(padded).put(json.toByteArray());
        while (b.hasRemaining()) {
            b.put((byte) ' ');
        }
        return b.array();
    }

    /**
     * Bytes of the data section.
     *
     * @param tensors the tensors
     * @return the sum of the tensors' sizes
     */
    public static long dataBytes(List<Spec> tensors) {
        long n = 0;
        for (Spec t : tensors) {
            n = Math.addExact(n, t.nbytes());
        }
        return n;
    }

    /**
     * Writes {@code file} (through a temporary file and a rename, so that a reader never sees
     * half a model).
     *
     * @return the file's size
     * @param file the file to write
     * @param metadata the {@code __metadata__} entries, or null for none
     * @param tensors the tensors, in the order of their data
     * @param filler the source of each tensor's bytes
     * @throws IOException when the file cannot be written or renamed
     */
    public static long write(Path file, Map<String, String> metadata, List<Spec> tensors, Filler filler)
            throws IOException {
        byte[] header = header(metadata, tensors);
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        ByteBuffer chunk = ByteBuffer.allocateDirect(CHUNK);
        long pos = 0;
        FileChannel channel;
        try {
            channel = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING);
        } catch (IOException e) {
            throw FileOperationException.of("create", tmp, e);
        }
        try (FileChannel ch = channel) {
            pos += writeFully(ch, ByteBuffer.wrap(header), pos, tmp);
            for (Spec t : tensors) {
                long n = t.nbytes();
                for (long off = 0; off < n; off += CHUNK) {
                    chunk.clear().limit((int) Math.min(CHUNK, n - off));
                    filler.fill(t, off, chunk);
                    chunk.flip();
                    if (chunk.remaining() != (int) Math.min(CHUNK, n - off)) {
                        throw new IllegalStateException("filler left " + Names.tensor(t.name()) + " short at " + off);
                    }
                    pos += writeFully(ch, chunk, pos, tmp);
                }
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        try {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            Files.deleteIfExists(tmp);
            throw FileOperationException.of("rename " + tmp + " to", file, e);
        }
        return pos;
    }

    /** Writes all of {@code b}; ENOSPC, EDQUOT, EIO... come out as "write PATH: ENOSPC (No space left on device)". */
    private static long writeFully(FileChannel ch, ByteBuffer b, long pos, Path file) throws IOException {
        long n = 0;
        try {
            while (b.hasRemaining()) {
                n += ch.write(b, pos + n);
            }
        } catch (IOException e) {
            throw FileOperationException.of("write", file, e);
        }
        return n;
    }
}
