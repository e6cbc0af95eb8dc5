package io.phxfs.safetensors;

import io.phxfs.core.FileOperationException;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

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

    /** The shortest header there can be: {@code {}}. */
    private static final long MIN_HEADER_BYTES = 2;

    private static final SafetensorsParser DEFAULT = new SafetensorsParser(DEFAULT_MAX_HEADER_BYTES);

    private final long maxHeaderBytes;

    /**
     * A parser with a header limit of {@code maxHeaderBytes} (1 .. 2^31 - 17).
     *
     * @param maxHeaderBytes the largest JSON header accepted, in bytes
     * @throws IllegalArgumentException when the limit is outside its range
     */
    public SafetensorsParser(long maxHeaderBytes) {
        if (maxHeaderBytes < 1 || maxHeaderBytes > HARD_MAX_HEADER_BYTES) {
            throw new IllegalArgumentException("maxHeaderBytes must be in 1.." + HARD_MAX_HEADER_BYTES + ", was "
                    + maxHeaderBytes);
        }
        this.maxHeaderBytes = maxHeaderBytes;
    }

    /**
     * The parser with the default 100 MB header limit.
     *
     * @return the shared standard parser
     */
    public static SafetensorsParser standard() {
        return DEFAULT;
    }

    /**
     * The largest JSON header this parser accepts.
     *
     * @return the limit in bytes
     */
    public long maxHeaderBytes() {
        return maxHeaderBytes;
    }

    /**
     * Parses {@code file}.
     *
     * @throws SafetensorsFormatException when the file breaks the format; a file of another kind
     *                                    (text, a zip archive, a pickle...) is named as such
     * @throws FileOperationException     when the OS refuses to open or read it (EACCES,
     *                                    EISDIR for a directory...), naming the path and reason
     * @throws IllegalArgumentException   when it is a named pipe, a socket or a device
     * @throws IOException                when it cannot be read for another reason
     * @param file the file to parse
     * @return the parsed header
     */
    public SafetensorsHeader parse(Path file) throws IOException {
        refuseSpecialFile(file);
        FileChannel channel;
        try {
            channel = FileChannel.open(file, StandardOpenOption.READ);
        } catch (IOException e) {
            throw FileOperationException.of("open", file, e);
        }
        // the file as opened (read while the channel is open: a mapping made beside this parse
        // is checked against it); only for local files, where it costs one stat
        java.nio.file.attribute.BasicFileAttributes identity = null;
        if (file.getFileSystem() == java.nio.file.FileSystems.getDefault()) {
            try {
                identity = Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class);
            } catch (IOException e) {
                identity = null; // unknown: an early mapping of it is then not taken
            }
        }
        try (FileChannel ch = channel) {
            long size;
            try {
                size = ch.size();
            } catch (IOException e) {
                throw FileOperationException.of("stat", file, e);
            }
            if (size == 0) {
                throw new SafetensorsFormatException(file, null,
                        "file is empty; a safetensors file starts with an 8-byte header length");
            }
            // the first bytes, for saying what the file is when it is no safetensors file; this
            // read is also the first, so a directory fails here with EISDIR
            ByteBuffer start = ByteBuffer.allocate((int) Math.min(size, FileKind.SNIFF_BYTES));
            readFully(ch, start, 0, file);
            byte[] head = start.array();
            if (size < SafetensorsHeader.LENGTH_PREFIX) {
                throw wrongKindOr(file, head, size, null, "file is only " + size
                        + " bytes; a safetensors file starts with an 8-byte header length");
            }
            long n = ByteBuffer.wrap(head, 0, SafetensorsHeader.LENGTH_PREFIX).order(ByteOrder.LITTLE_ENDIAN).getLong();
            long after = size - SafetensorsHeader.LENGTH_PREFIX;
            // Past the file first: random bytes, or any other file read as one, give a length of
            // quintillions, and "larger than the file" says what is wrong where "exceeds the
            // limit" only says the header would be big.
            if (Long.compareUnsigned(n, after) > 0) {
                boolean plausible = Long.compareUnsigned(n, maxHeaderBytes) <= 0;
                throw wrongKindOr(file, head, size, "header length", "0x" + Long.toHexString(n) + " ("
                        + Long.toUnsignedString(n) + " bytes) is larger than the file (" + size + " bytes)"
                        + (plausible ? ": the file is truncated, or it is not a safetensors file"
                                : ": not a safetensors file (its first 8 bytes must be the little-endian length of"
                                        + " the JSON header that follows them)"));
            }
            if (n > maxHeaderBytes) {
                throw wrongKindOr(file, head, size, "header length", n + " bytes exceeds the limit of " + maxHeaderBytes
                        + " bytes");
            }
            if (n < MIN_HEADER_BYTES) {
                throw wrongKindOr(file, head, size, "header length", n + (n == 1 ? " byte" : " bytes")
                        + " is too short: the header is a JSON object, at least " + MIN_HEADER_BYTES + " bytes ('{}')");
            }
            byte[] header = new byte[(int) n];
            readFully(ch, ByteBuffer.wrap(header), SafetensorsHeader.LENGTH_PREFIX, file);
            if (startsWithBom(header)) {
                // Jackson would skip it, but the format says the header begins with '{', and the
                // reference implementation (serde_json) refuses it: a file we accept that it
                // refuses would load here and fail everywhere else
                throw new SafetensorsFormatException(file, "header", "starts with a UTF-8 byte order mark (bytes EF BB BF"
                        + " at byte " + SafetensorsHeader.LENGTH_PREFIX + "); a safetensors header must begin with '{':"
                        + " write the file again without the byte order mark");
            }
            if (header[0] != '{') {
                // a length that happens to fit (a pickle's or a zip's first bytes can) but no
                // JSON object after it: the file's kind says more than the JSON error would
                String kind = FileKind.describe(head, head.length, size);
                if (kind != null) {
                    throw new SafetensorsFormatException(file, null, "not a safetensors file: " + kind);
                }
            }
            // the usual shape at byte speed, which is also its UTF-8 check; anything else (or
            // anything wrong) through the full parser, which names the tensor and field at fault
            long dataBytes = after - n;
            FastHeaderJson.Parsed fast = FastHeaderJson.parse(header, header.length, dataBytes);
            if (fast != null) {
                try {
                    return new SafetensorsHeader(file, size, n, fast.metadata(),
                            DataLayout.tile(file, fast.tensors(), dataBytes), identity);
                } catch (SafetensorsFormatException e) {
                    // the byte reader does not look for a name given twice: the full parser
                    // reports that first, where it is, as it reports everything else; an error
                    // it does not see stands
                    new HeaderJson(file, maxHeaderBytes).parse(header, header.length);
                    throw e;
                }
            }
            long bad = Utf8.firstInvalid(header, header.length);
            if (bad >= 0) {
                throw new SafetensorsFormatException(file, null, "header is not valid UTF-8 (byte 0x"
                        + String.format("%02x", header[(int) bad] & 0xff) + " at byte "
                        + (bad + SafetensorsHeader.LENGTH_PREFIX) + ")");
            }
            HeaderJson.Parsed parsed = new HeaderJson(file, maxHeaderBytes).parse(header, header.length);
            return new SafetensorsHeader(file, size, n, parsed.metadata(),
                    DataLayout.validate(file, parsed.entries(), dataBytes), identity);
        }
    }

    /**
     * A named pipe would block open(2) until some writer came (a model directory whose
     * model.safetensors is one hung the load), and a device need never end: neither is a file
     * of tensors. Only what stat(2) tells for certain is refused here; the open reports the rest.
     */
    static void refuseSpecialFile(Path file) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class);
        } catch (IOException e) {
            return;
        }
        if (a.isOther()) {
            throw new IllegalArgumentException(file + ": not a regular file (a named pipe, a socket or a device)");
        }
    }

    private static boolean startsWithBom(byte[] h) {
        return h.length >= 3 && (h[0] & 0xff) == 0xef && (h[1] & 0xff) == 0xbb && (h[2] & 0xff) == 0xbf;
    }

    /** "not a safetensors file: it is ..." when the start says what the file is, else the format error. */
    private static SafetensorsFormatException wrongKindOr(Path file, byte[] head, long size, String subject,
                                                          String problem) {
        String kind = FileKind.describe(head, head.length, size);
        return kind != null
                ? new SafetensorsFormatException(file, null, "not a safetensors file: " + kind)
                : new SafetensorsFormatException(file, subject, problem);
    }

    /**
     * The largest piece read into a heap buffer at once from a local file. A channel reads into
     * the heap through a temporary direct buffer of the request's size, which the JDK then
     * keeps for the thread: a 700 KB header read whole faulted in 700 KB of fresh memory (175
     * page faults, each several microseconds on a VM) to copy through once. 64 KiB pieces reuse
     * one small buffer; the extra reads cost microseconds. Only local files: a read of an
     * object store's channel is a request, and it gets the whole range in one.
     */
    static final int READ_PIECE = 64 << 10;

    private static void readFully(FileChannel ch, ByteBuffer buf, long pos, Path file) throws IOException {
        long start = pos;
        int limit = buf.limit();
        boolean pieces = file.getFileSystem() == java.nio.file.FileSystems.getDefault();
        try {
            while (buf.hasRemaining()) {
                if (pieces) {
                    buf.limit(buf.position() + Math.min(READ_PIECE, limit - buf.position()));
                }
                int r;
                try {
                    r = ch.read(buf, pos);
                } catch (IOException e) {
                    throw FileOperationException.of("read", file, e);
                }
                buf.limit(limit);
                if (r < 0) {
                    // The size was checked first: the file shrank while we read it.
                    throw new EOFException(file + ": file ended at byte " + pos + " while reading " + limit
                            + " bytes from byte " + start);
                }
                pos += r;
            }
        } finally {
            buf.limit(limit);
        }
    }
}
