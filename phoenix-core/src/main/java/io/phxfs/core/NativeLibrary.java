package io.phxfs.core;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The downcall handles for every function in phoenix.h, plus the few libc calls phoenix.h
 * leaves to the caller (close, lseek).
 *
 * <p>Loaded once per class loader: from {@code phx.library.path} / {@code PHX_LIBRARY_PATH}
 * when set (a developer's fresh CMake build), otherwise from the copy of libphoenix.so that
 * phoenix-native packs into its jar.
 *
 * <p>Type mapping (LP64 Linux): int → JAVA_INT; size_t, ssize_t, off_t, uint64_t → JAVA_LONG;
 * pointers → ADDRESS.
 */
@SuppressWarnings("restricted") // this class is the one place that links native code
final class NativeLibrary {
    static final String LIBRARY_PATH_PROPERTY = "phx.library.path";
    static final String LIBRARY_PATH_ENV = "PHX_LIBRARY_PATH";

    private static final Linker LINKER = Linker.nativeLinker();
    /** A const char* result: the string is read up to its NUL, never past this bound. */
    private static final AddressLayout C_STRING = ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(Integer.MAX_VALUE, JAVA_BYTE));

    // Only calls that neither block nor take contended locks may skip the thread-state
    // transition; everything that touches files, workers or devices stays an ordinary downcall
    // so that a long read never stalls the JVM at a safepoint.
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle CAPTURED_ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    static final Path LOADED_FROM;

    private static final MethodHandle INIT;
    private static final MethodHandle DEVICE_COUNT;
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle GET_DEVICE_INFO;
    private static final MethodHandle GET_PAGE_SIZE;
    private static final MethodHandle VERSION;
    private static final MethodHandle GET_MAP_MODE;
    private static final MethodHandle SET_CONFIG;
    private static final MethodHandle GET_CONFIG;
    private static final MethodHandle REGMEM;
    private static final MethodHandle DEREGMEM;
    private static final MethodHandle READ;
    private static final MethodHandle WRITE;
    private static final MethodHandle READ_BATCH;
    private static final MethodHandle WRITE_BATCH;
    private static final MethodHandle BATCH_SUBMIT_READ;
    private static final MethodHandle BATCH_SUBMIT_WRITE;
    private static final MethodHandle BATCH_WAIT;
    private static final MethodHandle BATCH_POLL;
    private static final MethodHandle BATCH_BYTES_DONE;
    private static final MethodHandle BATCH_DESTROY;
    private static final MethodHandle READ_STREAM;
    private static final MethodHandle WRITE_STREAM;
    private static final MethodHandle FILE_OPEN;
    private static final MethodHandle FILE_CACHED;
    private static final MethodHandle MEM_ALLOC;
    private static final MethodHandle MEM_ALLOC_UNINIT;
    private static final MethodHandle MEM_FREE;
    private static final MethodHandle MEMCPY_TO_HOST;
    private static final MethodHandle MEMCPY_TO_DEVICE;
    private static final MethodHandle STREAM_CREATE;
    private static final MethodHandle STREAM_SYNCHRONIZE;
    private static final MethodHandle STREAM_DESTROY;
    private static final MethodHandle LAST_ERROR;
    private static final MethodHandle MODE_NAME;
    private static final MethodHandle LIBC_CLOSE;
    private static final MethodHandle LIBC_LSEEK;

    static {
        LOADED_FROM = locate();
        Library phx = new Library(SymbolLookup.libraryLookup(LOADED_FROM, Arena.global()), LOADED_FROM.toString());
        Library libc = new Library(LINKER.defaultLookup(), "libc");

        FunctionDescriptor intVoid = FunctionDescriptor.of(JAVA_INT);
        FunctionDescriptor intInt = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
        FunctionDescriptor ioSync = FunctionDescriptor.of(JAVA_LONG,
                JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
        FunctionDescriptor ioBatch = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);
        FunctionDescriptor submit = FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT);
        FunctionDescriptor onBatch = FunctionDescriptor.of(JAVA_INT, ADDRESS);
        FunctionDescriptor ioStream = FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS,
                ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
        FunctionDescriptor devPtrLen = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG);
        FunctionDescriptor memcpy = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG);
        FunctionDescriptor devPtr = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);

        INIT = bind(phx, "phxfs_init", intVoid);
        DEVICE_COUNT = bind(phx, "phxfs_device_count", intVoid);
        OPEN = bind(phx, "phxfs_open", intInt);
        CLOSE = bind(phx, "phxfs_close", intInt);
        GET_DEVICE_INFO = bind(phx, "phxfs_get_device_info", devPtr);
        GET_PAGE_SIZE = bind(phx, "phxfs_get_page_size", FunctionDescriptor.of(JAVA_LONG), CRITICAL);
        VERSION = bind(phx, "phxfs_version", FunctionDescriptor.of(JAVA_INT), CRITICAL);
        GET_MAP_MODE = bind(phx, "phxfs_get_map_mode", intInt);
        SET_CONFIG = bind(phx, "phxfs_set_config", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        GET_CONFIG = bind(phx, "phxfs_get_config",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
        REGMEM = bind(phx, "phxfs_regmem",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        DEREGMEM = bind(phx, "phxfs_deregmem", devPtrLen);
        READ = bind(phx, "phxfs_read", ioSync);
        WRITE = bind(phx, "phxfs_write", ioSync);
        READ_BATCH = bind(phx, "phxfs_read_batch", ioBatch);
        WRITE_BATCH = bind(phx, "phxfs_write_batch", ioBatch);
        BATCH_SUBMIT_READ = bind(phx, "phxfs_batch_submit_read", submit, CAPTURE_ERRNO);
        BATCH_SUBMIT_WRITE = bind(phx, "phxfs_batch_submit_write", submit, CAPTURE_ERRNO);
        BATCH_WAIT = bind(phx, "phxfs_batch_wait", onBatch);
        BATCH_POLL = bind(phx, "phxfs_batch_poll", onBatch);
        BATCH_BYTES_DONE = bind(phx, "phxfs_batch_bytes_done", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
        BATCH_DESTROY = bind(phx, "phxfs_batch_destroy", onBatch);
        READ_STREAM = bind(phx, "phxfs_read_stream", ioStream);
        WRITE_STREAM = bind(phx, "phxfs_write_stream", ioStream);
        FILE_OPEN = bind(phx, "phxfs_file_open",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
        FILE_CACHED = bind(phx, "phxfs_file_cached_permille", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        MEM_ALLOC = bind(phx, "phxfs_mem_alloc", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS));
        MEM_ALLOC_UNINIT = bind(phx, "phxfs_mem_alloc_uninit", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS));
        MEM_FREE = bind(phx, "phxfs_mem_free", devPtr);
        MEMCPY_TO_HOST = bind(phx, "phxfs_memcpy_to_host", memcpy);
        MEMCPY_TO_DEVICE = bind(phx, "phxfs_memcpy_to_device", memcpy);
        STREAM_CREATE = bind(phx, "phxfs_stream_create", devPtr);
        STREAM_SYNCHRONIZE = bind(phx, "phxfs_stream_synchronize", devPtr);
        STREAM_DESTROY = bind(phx, "phxfs_stream_destroy", devPtr);
        LAST_ERROR = bind(phx, "phxfs_last_error", FunctionDescriptor.of(C_STRING), CRITICAL);
        MODE_NAME = bind(phx, "phxfs_mode_name", FunctionDescriptor.of(C_STRING, JAVA_INT), CRITICAL);
        LIBC_CLOSE = bind(libc, "close", intInt, CAPTURE_ERRNO);
        LIBC_LSEEK = bind(libc, "lseek",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), CAPTURE_ERRNO);
    }

    private NativeLibrary() {
    }

    /** Forces loading; the static initialiser reports a missing or broken library. */
    static void ensureLoaded() {
    }

    private record Library(SymbolLookup lookup, String name) {
    }

    private static MethodHandle bind(Library lib, String symbol, FunctionDescriptor fd,
                                     Linker.Option... options) {
        MemorySegment address = lib.lookup().find(symbol).orElseThrow(() -> new UnsatisfiedLinkError(
                "symbol " + symbol + " not found in " + lib.name()
                        + " (phoenix-core and libphoenix are out of step)"));
        return LINKER.downcallHandle(address, fd, options);
    }

    private static Path locate() {
        String explicit = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (explicit == null || explicit.isBlank()) {
            explicit = System.getenv(LIBRARY_PATH_ENV);
        }
        if (explicit != null && !explicit.isBlank()) {
            Path p = Path.of(explicit).toAbsolutePath();
            if (!Files.isRegularFile(p)) {
                throw new UnsatisfiedLinkError("libphoenix not found at " + p + " (from "
                        + LIBRARY_PATH_PROPERTY + " / " + LIBRARY_PATH_ENV + ")");
            }
            return p;
        }
        return extract();
    }

    /** The resource directory name for this machine, e.g. linux-x86_64. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String osPart = os.startsWith("linux") ? "linux" : os.replaceAll("\\W", "");
        String archPart = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch;
        };
        return osPart + "-" + archPart;
    }

    private static Path extract() {
        String resource = "native/" + platform() + "/libphoenix.so";
        ClassLoader loader = NativeLibrary.class.getClassLoader();
        try (InputStream in = loader == null ? ClassLoader.getSystemResourceAsStream(resource)
                : loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("no " + resource + " on the class path (is phoenix-native "
                        + "built for " + platform() + "?); set " + LIBRARY_PATH_PROPERTY + " or "
                        + LIBRARY_PATH_ENV + " to a libphoenix.so");
            }
            // A private directory rather than a predictable name: another user must not be able
            // to plant a library there between our write and the dlopen.
            Path dir = Files.createTempDirectory("phoenix-native-");
            Path lib = dir.resolve("libphoenix.so");
            Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            // Once dlopen has mapped it the file is no longer needed by name.
            // deleteOnExit runs in reverse order of registration: the file before its directory
            dir.toFile().deleteOnExit();
            lib.toFile().deleteOnExit();
            return lib;
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("cannot extract " + resource + ": " + e);
            err.initCause(e);
            throw err;
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException("unexpected checked exception from a downcall", t);
    }

    static int captured(MemorySegment capture) {
        return (int) CAPTURED_ERRNO.get(capture, 0L);
    }

    static String cString(MemorySegment s) {
        return s.equals(MemorySegment.NULL) ? "" : s.getString(0);
    }

    // ---- library and devices -------------------------------------------------------------

    static int init() {
        try {
            return (int) INIT.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int deviceCount() {
        try {
            return (int) DEVICE_COUNT.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int open(int dev) {
        try {
            return (int) OPEN.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int close(int dev) {
        try {
            return (int) CLOSE.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int getDeviceInfo(int dev, MemorySegment info) {
        try {
            return (int) GET_DEVICE_INFO.invokeExact(dev, info);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int version() {
        try {
            return (int) VERSION.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long getPageSize() {
        try {
            return (long) GET_PAGE_SIZE.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int getMapMode(int dev) {
        try {
            return (int) GET_MAP_MODE.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int setConfig(MemorySegment key, MemorySegment value) {
        try {
            return (int) SET_CONFIG.invokeExact(key, value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int getConfig(MemorySegment key, MemorySegment buf, long len) {
        try {
            return (int) GET_CONFIG.invokeExact(key, buf, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- registration and memory ---------------------------------------------------------

    static int regmem(int dev, MemorySegment addr, long len, MemorySegment targetOut) {
        try {
            return (int) REGMEM.invokeExact(dev, addr, len, targetOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int deregmem(int dev, MemorySegment addr, long len) {
        try {
            return (int) DEREGMEM.invokeExact(dev, addr, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memAlloc(int dev, long len, MemorySegment ptrOut) {
        try {
            return (int) MEM_ALLOC.invokeExact(dev, len, ptrOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memAllocUninit(int dev, long len, MemorySegment ptrOut) {
        try {
            return (int) MEM_ALLOC_UNINIT.invokeExact(dev, len, ptrOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memFree(int dev, MemorySegment ptr) {
        try {
            return (int) MEM_FREE.invokeExact(dev, ptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyToHost(int dev, MemorySegment dst, MemorySegment src, long len) {
        try {
            return (int) MEMCPY_TO_HOST.invokeExact(dev, dst, src, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memcpyToDevice(int dev, MemorySegment dst, MemorySegment src, long len) {
        try {
            return (int) MEMCPY_TO_DEVICE.invokeExact(dev, dst, src, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- I/O -----------------------------------------------------------------------------

    static long read(int fd, int dev, MemorySegment buf, long bufOffset, long nbytes, long fileOffset) {
        try {
            return (long) READ.invokeExact(fd, dev, buf, bufOffset, nbytes, fileOffset);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long write(int fd, int dev, MemorySegment buf, long bufOffset, long nbytes, long fileOffset) {
        try {
            return (long) WRITE.invokeExact(fd, dev, buf, bufOffset, nbytes, fileOffset);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int readBatch(MemorySegment reqs, int n) {
        try {
            return (int) READ_BATCH.invokeExact(reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int writeBatch(MemorySegment reqs, int n) {
        try {
            return (int) WRITE_BATCH.invokeExact(reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment batchSubmitRead(MemorySegment capture, MemorySegment reqs, int n) {
        try {
            return (MemorySegment) BATCH_SUBMIT_READ.invokeExact(capture, reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment batchSubmitWrite(MemorySegment capture, MemorySegment reqs, int n) {
        try {
            return (MemorySegment) BATCH_SUBMIT_WRITE.invokeExact(capture, reqs, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchWait(MemorySegment batch) {
        try {
            return (int) BATCH_WAIT.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long batchBytesDone(MemorySegment batch) {
        try {
            return (long) BATCH_BYTES_DONE.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchPoll(MemorySegment batch) {
        try {
            return (int) BATCH_POLL.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int batchDestroy(MemorySegment batch) {
        try {
            return (int) BATCH_DESTROY.invokeExact(batch);
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

    static int fileCachedPermille(int fd) {
        try {
            return (int) FILE_CACHED.invokeExact(fd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int fileOpen(MemorySegment path, int flags, int mode, int wantDirect, MemorySegment isDirectOut) {
        try {
            return (int) FILE_OPEN.invokeExact(path, flags, mode, wantDirect, isDirectOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- streams -------------------------------------------------------------------------

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

    // ---- diagnostics ---------------------------------------------------------------------

    static String lastError() {
        try {
            return cString((MemorySegment) LAST_ERROR.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static String modeName(int mode) {
        try {
            return cString((MemorySegment) MODE_NAME.invokeExact(mode));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- libc ----------------------------------------------------------------------------

    /** close(2); returns 0 or -errno. */
    static int closeFd(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            int rc = (int) LIBC_CLOSE.invokeExact(capture, fd);
            return rc == 0 ? 0 : -captured(capture);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** lseek(fd, 0, SEEK_END): the size of the open file, or -errno. */
    static long fileSize(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE_LAYOUT);
            long rc = (long) LIBC_LSEEK.invokeExact(capture, fd, 0L, 2 /* SEEK_END */);
            return rc >= 0 ? rc : -captured(capture);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
