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
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * Loading and linking: finds libphoenix, links symbols from it and from libc, and holds what
 * every downcall needs (errno capture, C strings, the per-thread error message). The
 * downcalls themselves live in one package-private class per area: {@link DeviceCalls},
 * {@link MemoryCalls}, {@link IoCalls}, {@link StreamCalls}, {@link FileCalls}.
 *
 * <p>Loaded once per class loader: from {@code phx.library.path} / {@code PHX_LIBRARY_PATH}
 * when set (a developer's fresh CMake build), otherwise from the copy of libphoenix.so that
 * phoenix-native packs into its jar.
 *
 * <p>Type mapping (LP64 Linux): int → JAVA_INT; size_t, ssize_t, off_t, uint64_t, int64_t →
 * JAVA_LONG; uint8_t → JAVA_BYTE; pointers → ADDRESS.
 */
@SuppressWarnings("restricted") // this class is the one place that links native code
final class NativeLibrary {
    static final String LIBRARY_PATH_PROPERTY = "phx.library.path";
    static final String LIBRARY_PATH_ENV = "PHX_LIBRARY_PATH";

    private static final Linker LINKER = Linker.nativeLinker();
    /** A const char* result: the string is read up to its NUL, never past this bound. */
    static final AddressLayout C_STRING = ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(Integer.MAX_VALUE, JAVA_BYTE));

    // Only calls that neither block nor take contended locks may skip the thread-state
    // transition; everything that touches files, workers or devices stays an ordinary downcall
    // so that a long read never stalls the JVM at a safepoint.
    static final Linker.Option CRITICAL = Linker.Option.critical(false);
    static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle CAPTURED_ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    static final Path LOADED_FROM;
    private static final SymbolLookup PHOENIX;
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    private static final MethodHandle LAST_ERROR;

    static {
        LOADED_FROM = locate();
        PHOENIX = SymbolLookup.libraryLookup(LOADED_FROM, Arena.global());
        LAST_ERROR = downcall("phxfs_last_error", FunctionDescriptor.of(C_STRING), CRITICAL);
    }

    private NativeLibrary() {
    }

    /** Forces loading; the static initialiser reports a missing or broken library. */
    static void ensureLoaded() {
    }

    /** A libphoenix function; a missing symbol fails class initialisation of the caller. */
    static MethodHandle downcall(String symbol, FunctionDescriptor fd, Linker.Option... options) {
        return LINKER.downcallHandle(PHOENIX.find(symbol).orElseThrow(() -> notFound(symbol, LOADED_FROM.toString())),
                fd, options);
    }

    /** A libc function (close, lseek): what phoenix.h leaves to the caller. */
    static MethodHandle libc(String symbol, FunctionDescriptor fd, Linker.Option... options) {
        return LINKER.downcallHandle(LIBC.find(symbol).orElseThrow(() -> notFound(symbol, "libc")), fd, options);
    }

    /** An upcall stub that lives as long as the process; for callbacks created once. */
    static MemorySegment upcall(MethodHandle target, FunctionDescriptor fd) {
        return LINKER.upcallStub(target, fd, Arena.global());
    }

    private static UnsatisfiedLinkError notFound(String symbol, String library) {
        return new UnsatisfiedLinkError("symbol " + symbol + " not found in " + library
                + " (phoenix-core and libphoenix are out of step)");
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

    /** Unwraps what invokeExact declares: downcalls throw no checked exceptions. */
    static RuntimeException rethrow(Throwable t) {
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

    /** The message of the last failure on this thread ("" if none): phxfs_last_error. */
    static String lastError() {
        try {
            return cString((MemorySegment) LAST_ERROR.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
