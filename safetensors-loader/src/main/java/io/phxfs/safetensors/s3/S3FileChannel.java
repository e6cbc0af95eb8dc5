package io.phxfs.safetensors.s3;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * A read-only channel over one object, for the loader's header and index reads: bytes within
 * the object's first GET (cached by the file system) come from memory, any others from one
 * ranged GET per read call, written straight into the caller's buffer. Not for the tensor
 * data, which {@link S3Reads} fetches in parallel.
 */
final class S3FileChannel extends FileChannel {
    private final S3FileSystem fs;
    private final S3Path path;
    private final S3Client.ObjectInfo info;
    private final byte[] prefix;
    private long position;

    S3FileChannel(S3FileSystem fs, S3Path path) throws IOException {
        this.fs = fs;
        this.path = path;
        S3Client.Prefix p = fs.prefix(path);
        this.info = p.info();
        this.prefix = p.bytes();
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        int n = read(dst, position);
        if (n > 0) {
            position += n;
        }
        return n;
    }

    @Override
    public int read(ByteBuffer dst, long pos) throws IOException {
        if (!isOpen()) {
            throw new ClosedChannelException();
        }
        if (pos < 0) {
            throw new IllegalArgumentException("negative position " + pos);
        }
        if (pos >= info.size()) {
            return -1;
        }
        int n = (int) Math.min(dst.remaining(), info.size() - pos);
        if (n == 0) {
            return 0;
        }
        int cached = (int) Math.max(0, Math.min(n, prefix.length - pos));
        if (cached > 0) {
            dst.put(prefix, (int) pos, cached);
        }
        if (cached < n) {
            MemorySegment into = MemorySegment.ofBuffer(dst).asSlice(0, n - cached);
            fs.client().read(path.bucket(), path.key(), info, pos + cached, into, b -> { }, () -> false);
            dst.position(dst.position() + n - cached);
        }
        return n;
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            int n = read(dsts[i]);
            if (n < 0) {
                return total == 0 ? -1 : total;
            }
            total += n;
            if (dsts[i].hasRemaining()) {
                break;
            }
        }
        return total;
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    public FileChannel position(long newPosition) {
        if (newPosition < 0) {
            throw new IllegalArgumentException("negative position " + newPosition);
        }
        position = newPosition;
        return this;
    }

    @Override
    public long size() {
        return info.size();
    }

    @Override
    public int write(ByteBuffer src) {
        throw new NonWritableChannelException();
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) {
        throw new NonWritableChannelException();
    }

    @Override
    public int write(ByteBuffer src, long pos) {
        throw new NonWritableChannelException();
    }

    @Override
    public FileChannel truncate(long size) {
        throw new NonWritableChannelException();
    }

    @Override
    public void force(boolean metaData) {
        // nothing is written
    }

    @Override
    public long transferTo(long pos, long count, WritableByteChannel target) throws IOException {
        ByteBuffer b = ByteBuffer.allocate((int) Math.min(count, 1 << 20));
        int n = read(b, pos);
        if (n <= 0) {
            return 0;
        }
        b.flip();
        return target.write(b);
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long pos, long count) {
        throw new NonWritableChannelException();
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long pos, long size) {
        throw new UnsupportedOperationException(path + ": an S3 object cannot be mapped into memory");
    }

    @Override
    public FileLock lock(long pos, long size, boolean shared) {
        throw new UnsupportedOperationException(path + ": S3 objects cannot be locked");
    }

    @Override
    public FileLock tryLock(long pos, long size, boolean shared) {
        throw new UnsupportedOperationException(path + ": S3 objects cannot be locked");
    }

    @Override
    protected void implCloseChannel() {
        // holds no connection: each read's GET ends with the read
    }

    @Override
    public String toString() {
        return "S3FileChannel[" + path + ", " + info.size() + " bytes]";
    }
}
