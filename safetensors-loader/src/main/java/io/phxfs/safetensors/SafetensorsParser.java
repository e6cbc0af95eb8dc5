package io.phxfs.safetensors;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads and validates the header of a safetensors file: the 8-byte little-endian length,
 * a UTF-8 JSON object of tensor entries and {@code __metadata__}, and a data section that the
 * tensors tile exactly. Any violation raises {@link SafetensorsFormatException}.
 *
 * <p>Memory: the header length is checked against the limit and against the file's size
 * before anything is allocated, so a file can make the parser allocate at most what it
 * actually holds (and never more than the limit); no allocation follows a number from the
 * header.
 */
public final class SafetensorsParser {
    /** Upstream safetensors' limit on the header (MAX_HEADER_SIZE). */
    public static final long DEFAULT_MAX_HEADER_BYTES = 100_000_000L;

    /** Largest header a Java byte array can hold. */
    private static final long HARD_MAX_HEADER_BYTES = Integer.MAX_VALUE - 16;

    private static final SafetensorsParser DEFAULT = new SafetensorsParser(DEFAULT_MAX_HEADER_BYTES);

    private final long maxHeaderBytes;

    /** A parser with a header limit of {@code maxHeaderBytes} (1 .. 2^31 - 17). */
    public SafetensorsParser(long maxHeaderBytes) {
        if (maxHeaderBytes < 1 || maxHeaderBytes > HARD_MAX_HEADER_BYTES) {
            throw new IllegalArgumentException("maxHeaderBytes must be in 1.." + HARD_MAX_HEADER_BYTES + ", was "
                    + maxHeaderBytes);
        }
        this.maxHeaderBytes = maxHeaderBytes;
    }

    /** The parser with the default 100 MB header limit. */
    public static SafetensorsParser standard() {
        return DEFAULT;
    }

    public long maxHeaderBytes() {
        return maxHeaderBytes;
    }

    /**
     * Parses {@code file}.
     *
     * @throws SafetensorsFormatException when the file breaks the format
     * @throws IOException                when it cannot be read
     */
    public SafetensorsHeader parse(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < SafetensorsHeader.LENGTH_PREFIX) {
                throw new SafetensorsFormatException(file, null, size == 0
                        ? "file is empty; a safetensors file starts with an 8-byte header length"
                        : "file is only " + size + " bytes; a safetensors file starts with an 8-byte header length");
            }
            ByteBuffer prefix = ByteBuffer.allocate(SafetensorsHeader.LENGTH_PREFIX).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, prefix, 0, file);
            long n = prefix.getLong(0);
            long after = size - SafetensorsHeader.LENGTH_PREFIX;
            if (Long.compareUnsigned(n, maxHeaderBytes) > 0) {
                throw new SafetensorsFormatException(file, "header length", Long.toUnsignedString(n)
                        + " bytes exceeds the limit of " + maxHeaderBytes + " bytes");
            }
            if (n > after) {
                throw new SafetensorsFormatException(file, "header length", n + " bytes runs past the end of the file ("
                        + after + " bytes follow the length)");
            }
            if (n == 0) {
                throw new SafetensorsFormatException(file, "header length", "0 bytes; the header must be a JSON object");
            }
            byte[] header = new byte[(int) n];
            readFully(ch, ByteBuffer.wrap(header), SafetensorsHeader.LENGTH_PREFIX, file);
            long bad = Utf8.firstInvalid(header, header.length);
            if (bad >= 0) {
                throw new SafetensorsFormatException(file, null, "header is not valid UTF-8 (at byte "
                        + (bad + SafetensorsHeader.LENGTH_PREFIX) + ")");
            }
            HeaderJson.Parsed parsed = new HeaderJson(file, maxHeaderBytes).parse(header, header.length);
            long dataBytes = after - n;
            return new SafetensorsHeader(file, size, n, parsed.metadata(),
                    DataLayout.validate(file, parsed.entries(), dataBytes));
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer buf, long pos, Path file) throws IOException {
        long start = pos;
        while (buf.hasRemaining()) {
            int r = ch.read(buf, pos);
            if (r < 0) {
                // The size was checked first: the file shrank while we read it.
                throw new EOFException(file + ": file ended at byte " + pos + " while reading " + (buf.limit())
                        + " bytes from byte " + start);
            }
            pos += r;
        }
    }
}
