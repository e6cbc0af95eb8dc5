package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.EnumSet;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * An open file for libphoenix I/O (phxfs_file_open), with O_DIRECT where the file system
 * allows it. Every transfer names a {@link RegisteredBuffer}; device buffers move without a
 * Java-side copy.
 *
 * <p>Closing while an async batch or an unsynchronised stream op still uses the file throws
 * {@link PhoenixException} with {@link Errno#EBUSY}; any use after close throws
 * {@link IllegalStateException}.
 */
public final class PhxFile implements AutoCloseable {
    // Linux open(2) flags (asm-generic values, shared by x86-64 and aarch64).
    private static final int O_RDONLY = 0;
    private static final int O_WRONLY = 1;
    private static final int O_RDWR = 2;
    private static final int O_CREAT = 0100;
    private static final int O_TRUNC = 01000;
    private static final int O_CLOEXEC = 02000000;
    private static final int CREATE_MODE = 0644;

    private final Path path;
    private final int fd;
    private final boolean direct;
    private final UseGate gate = new UseGate();

    private PhxFile(Path path, int fd, boolean direct) {
        this.path = path;
        this.fd = fd;
        this.direct = direct;
    }

    /**
     * Opens {@code path}. READ and WRITE together open it read-write; neither means READ.
     *
     * @throws PhoenixException naming the path when the open fails
     * @param path the file to open
     * @param modes how to open it
     * @return the open file; the caller closes it
     */
    public static PhxFile open(Path path, OpenMode... modes) {
        EnumSet<OpenMode> set = EnumSet.noneOf(OpenMode.class);
        for (OpenMode m : modes) {
            set.add(m);
        }
        boolean write = set.contains(OpenMode.WRITE);
        boolean read = set.contains(OpenMode.READ) || !write;
        int flags = (read && write ? O_RDWR : write ? O_WRONLY : O_RDONLY) | O_CLOEXEC;
        if (set.contains(OpenMode.CREATE)) {
            flags |= O_CREAT;
        }
        if (set.contains(OpenMode.TRUNCATE)) {
            flags |= O_TRUNC;
        }
        boolean wantDirect = set.contains(OpenMode.DIRECT);
        Phoenix.open();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment isDirect = arena.allocate(JAVA_INT);
            int rc = FileCalls.fileOpen(arena.allocateFrom(path.toString()), flags, CREATE_MODE,
                    wantDirect ? 1 : 0, isDirect);
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_file_open(" + path + ", " + set + ")", rc);
            }
            return new PhxFile(path, rc, isDirect.get(JAVA_INT, 0) != 0);
        }
    }

    /**
     * The path the file was opened with.
     *
     * @return the path
     */
    public Path path() {
        return path;
    }

    /**
     * The file descriptor, for callers that mix in their own system calls.
     *
     * @return the open descriptor
     */
    public int fd() {
        gate.checkOpen(this);
        return fd;
    }

    /**
     * Whether the file was opened with O_DIRECT (DIRECT requested and accepted by the file system).
     *
     * @return true when reads and writes bypass the page cache
     */
    public boolean isDirect() {
        return direct;
    }

    /**
     * An estimate of the share of the file's pages in the page cache, 0.0 to 1.0: a cold file
     * reads faster with O_DIRECT, a warm one from the cache. libphoenix samples 64 evenly spread
     * pages with mincore (every page of a file with fewer) rather than walking the whole file,
     * which for a multi-gigabyte file costs tens of milliseconds; the answer is good to about
     * 6 % and tells warm from cold, not which ranges are cached. An empty file counts as 1.0.
     *
     * @return the cached share, from 0.0 to 1.0
     */
    public double cachedFraction() {
        gate.acquire(this);
        try {
            int r = FileCalls.fileCachedPermille(fd);
            if (r < 0) {
                throw PhoenixException.fromNative("phxfs_file_cached_permille(" + path + ")", r);
            }
            return r / 1000.0;
        } finally {
            gate.release();
        }
    }

    /**
     * The current size of the open file.
     *
     * @return the size in bytes
     */
    public long size() {
        gate.acquire(this);
        try {
            long n = FileCalls.fileSize(fd);
            if (n < 0) {
                throw new PhoenixException("lseek(" + path + ", 0, SEEK_END)", (int) -n);
            }
            return n;
        } finally {
            gate.release();
        }
    }

    /**
     * Reads up to {@code nbytes} at {@code fileOffset} into {@code buf} at {@code bufOffset}.
     *
     * @return the bytes read: fewer than asked only at end of file
     * @param buf the buffer to read into
     * @param bufOffset where in {@code buf} the bytes go
     * @param nbytes the most bytes to read
     * @param fileOffset where in the file the read starts
     */
    public long read(RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return transfer(false, buf, bufOffset, nbytes, fileOffset);
    }

    /**
     * Writes {@code nbytes} from {@code buf} at {@code bufOffset} to the file at {@code fileOffset}.
     *
     * @param buf the buffer to write from
     * @param bufOffset where in {@code buf} the bytes start
     * @param nbytes the number of bytes to write
     * @param fileOffset where in the file the write starts
     * @return the bytes written
     */
    public long write(RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return transfer(true, buf, bufOffset, nbytes, fileOffset);
    }

    private long transfer(boolean write, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        buf.checkIoRange(bufOffset, nbytes, write ? "write" : "read", path);
        checkFileOffset(fileOffset);
        acquire(buf);
        try {
            long rc = write ? IoCalls.write(fd, buf.deviceId(), buf.base(), bufOffset, nbytes, fileOffset)
                    : IoCalls.read(fd, buf.deviceId(), buf.base(), bufOffset, nbytes, fileOffset);
            if (rc < 0) {
                throw PhoenixException.fromNative(describe(write ? "phxfs_write" : "phxfs_read", buf, bufOffset, nbytes,
                        fileOffset), rc);
            }
            return rc;
        } finally {
            release(buf);
        }
    }

    /**
     * Enqueues a read on {@code stream}: it runs when the stream reaches it, ordered with the
     * stream's other work. The result is in {@link StreamOp#bytesDone()} once the stream has
     * been synchronised; the file and the buffer stay in use until then.
     *
     * <p>When libphoenix refuses the operation the PhoenixException is thrown here, and the
     * file and buffer still stay in use until the next synchronize: a partly enqueued
     * operation may yet run on the stream.
     *
     * @param stream the stream to queue the read on
     * @param buf the buffer to read into
     * @param bufOffset where in {@code buf} the bytes go
     * @param nbytes the most bytes to read
     * @param fileOffset where in the file the read starts
     * @return the queued operation, whose result is known after synchronisation
     */
    public StreamOp readAsync(DeviceStream stream, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return enqueue(false, stream, buf, bufOffset, nbytes, fileOffset);
    }

    /**
     * Enqueues a write on {@code stream}; see {@link #readAsync}.
     *
     * @param stream the stream to queue the write on
     * @param buf the buffer to write from
     * @param bufOffset where in {@code buf} the bytes start
     * @param nbytes the number of bytes to write
     * @param fileOffset where in the file the write starts
     * @return the queued operation, whose result is known after synchronisation
     */
    public StreamOp writeAsync(DeviceStream stream, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return enqueue(true, stream, buf, bufOffset, nbytes, fileOffset);
    }

    private StreamOp enqueue(boolean write, DeviceStream stream, RegisteredBuffer buf, long bufOffset,
                             long nbytes, long fileOffset) {
        String call = write ? "phxfs_write_stream" : "phxfs_read_stream";
        buf.checkIoRange(bufOffset, nbytes, call, path);
        checkFileOffset(fileOffset);
        if (!buf.isHost() && buf.deviceId() != stream.device().id()) {
            throw new IllegalArgumentException(call + ": " + buf + " is not on the stream's device "
                    + stream.device().id());
        }
        acquire(buf);
        StreamOp op;
        try {
            op = new StreamOp(this, buf, write, nbytes, bufOffset, fileOffset);
        } catch (RuntimeException | Error e) {
            release(buf);
            throw e;
        }
        stream.enqueue(op, s -> {
            int rc = write
                    ? StreamCalls.writeStream(fd, buf.deviceId(), buf.base(), op.nbytesCell(),
                            op.bufOffsetCell(), op.fileOffsetCell(), op.bytesDoneCell(), s)
                    : StreamCalls.readStream(fd, buf.deviceId(), buf.base(), op.nbytesCell(),
                            op.bufOffsetCell(), op.fileOffsetCell(), op.bytesDoneCell(), s);
            if (rc < 0) {
                throw PhoenixException.fromNative(describe(call, buf, bufOffset, nbytes, fileOffset), rc);
            }
        });
        return op;
    }

    void acquire(RegisteredBuffer buf) {
        gate.acquire(this);
        try {
            buf.acquire();
        } catch (RuntimeException e) {
            gate.release();
            throw e;
        }
    }

    void release(RegisteredBuffer buf) {
        buf.release();
        gate.release();
    }

    String describe(String call, RegisteredBuffer buf, long bufOffset, long nbytes, long fileOffset) {
        return call + "(" + path + " fd " + fd + ", file offset " + fileOffset + ", " + nbytes + " bytes, "
                + buf + " offset " + bufOffset + ")";
    }

    private void checkFileOffset(long fileOffset) {
        if (fileOffset < 0) {
            throw new IllegalArgumentException("negative file offset " + fileOffset + " for " + path);
        }
    }

    /**
     * Whether {@link #close()} has been called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return gate.isClosed();
    }

    @Override
    public void close() {
        if (!gate.beginClose(this)) {
            return;
        }
        int rc = FileCalls.closeFd(fd);
        // After close(2) fails the descriptor is released anyway on Linux; retrying could close
        // a descriptor another thread has just been given, so the file counts as closed.
        if (rc < 0) {
            throw new PhoenixException("close(" + path + " fd " + fd + ")", -rc);
        }
    }

    @Override
    public String toString() {
        return "PhxFile[" + path + (direct ? ", O_DIRECT" : "") + "]";
    }
}
