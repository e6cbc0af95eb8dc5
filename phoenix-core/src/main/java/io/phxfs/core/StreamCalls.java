package io.phxfs.core;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.phxfs.core.NativeLibrary.downcall;
import static io.phxfs.core.NativeLibrary.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** phoenix.h: accelerator streams and stream-ordered I/O. */
final class StreamCalls {
    private static final FunctionDescriptor DEV_PTR = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);
    private static final FunctionDescriptor IO_STREAM = FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS,
            ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS);

    private static final MethodHandle STREAM_CREATE = downcall("phxfs_stream_create", DEV_PTR);
    private static final MethodHandle STREAM_SYNCHRONIZE = downcall("phxfs_stream_synchronize", DEV_PTR);
    private static final MethodHandle STREAM_DESTROY = downcall("phxfs_stream_destroy", DEV_PTR);
    private static final MethodHandle READ_STREAM = downcall("phxfs_read_stream", IO_STREAM);
    private static final MethodHandle WRITE_STREAM = downcall("phxfs_write_stream", IO_STREAM);
    // core-2 call
    private static final MethodHandle CHECK_STREAM = downcall("phxfs_check_stream", DEV_PTR);

    private StreamCalls() {
    }

    static int streamCreate(int dev, MemorySegment streamOut) {
        try {
            return (int) STREAM_CREATE.invokeExact(dev, streamOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int streamSynchronize(int dev, MemorySegment stream) {
        try {
            return (int) STREAM_SYNCHRONIZE.invokeExact(dev, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int streamDestroy(int dev, MemorySegment stream) {
        try {
            return (int) STREAM_DESTROY.invokeExact(dev, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int checkStream(int dev, MemorySegment stream) {
        try {
            return (int) CHECK_STREAM.invokeExact(dev, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int readStream(int fd, int dev, MemorySegment buf, MemorySegment nbytes, MemorySegment bufOffset,
                          MemorySegment fileOffset, MemorySegment bytesDone, MemorySegment stream) {
        try {
            return (int) READ_STREAM.invokeExact(fd, dev, buf, nbytes, bufOffset, fileOffset, bytesDone, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int writeStream(int fd, int dev, MemorySegment buf, MemorySegment nbytes, MemorySegment bufOffset,
                           MemorySegment fileOffset, MemorySegment bytesDone, MemorySegment stream) {
        try {
            return (int) WRITE_STREAM.invokeExact(fd, dev, buf, nbytes, bufOffset, fileOffset, bytesDone, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
