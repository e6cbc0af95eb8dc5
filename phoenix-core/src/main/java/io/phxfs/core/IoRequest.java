package io.phxfs.core;

import java.util.Objects;

/**
 * One read or write of an {@link IoBatch}, with every number named. The factories take each
 * offset right after the thing it indexes and the length last:
 * {@code read(file, fileOffset, buffer, bufferOffset, length)}, so that
 * {@code IoRequest.read(f, 4096, buf, 0, 1 << 20)} reads 1 MiB from file offset 4096 into
 * the start of {@code buf}.
 *
 * @param write        true for a write (buffer to file), false for a read (file to buffer)
 * @param file         the open file
 * @param fileOffset   where in the file the bytes start, {@code >= 0}
 * @param buffer       the memory, on a device or the host
 * @param bufferOffset where in {@code buffer} the bytes start, {@code >= 0}
 * @param length       how many bytes, {@code >= 0}
 */
public record IoRequest(boolean write, PhxFile file, long fileOffset, RegisteredBuffer buffer, long bufferOffset,
                        long length) {
    /**
     * Checks what can be checked without the native side; the buffer range is checked when
     * the request is added to a batch.
     *
     * @throws NullPointerException     when {@code file} or {@code buffer} is null
     * @throws IllegalArgumentException when an offset or the length is negative
     */
    public IoRequest {
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(buffer, "buffer");
        if (fileOffset < 0 || bufferOffset < 0 || length < 0) {
            throw new IllegalArgumentException((write ? "write" : "read") + " of " + file.path()
                    + ": negative fileOffset, bufferOffset or length (" + fileOffset + ", " + bufferOffset + ", "
                    + length + ")");
        }
    }

    /**
     * A read of {@code length} bytes of {@code file} from {@code fileOffset} into
     * {@code buffer} at {@code bufferOffset}.
     *
     * @param file         the file, open for reading
     * @param fileOffset   the first byte of the file to read
     * @param buffer       where the bytes go
     * @param bufferOffset the first byte of {@code buffer} to fill
     * @param length       how many bytes; a read past the end of the file is short, not an error
     * @return the request, to pass to {@link IoBatch#add(IoRequest)}
     */
    public static IoRequest read(PhxFile file, long fileOffset, RegisteredBuffer buffer, long bufferOffset,
                                 long length) {
        return new IoRequest(false, file, fileOffset, buffer, bufferOffset, length);
    }

    /**
     * A write of {@code length} bytes of {@code buffer} from {@code bufferOffset} into
     * {@code file} at {@code fileOffset}.
     *
     * @param file         the file, open for writing
     * @param fileOffset   the first byte of the file to write
     * @param buffer       where the bytes come from
     * @param bufferOffset the first byte of {@code buffer} to write
     * @param length       how many bytes
     * @return the request, to pass to {@link IoBatch#add(IoRequest)}
     */
    public static IoRequest write(PhxFile file, long fileOffset, RegisteredBuffer buffer, long bufferOffset,
                                  long length) {
        return new IoRequest(true, file, fileOffset, buffer, bufferOffset, length);
    }
}
