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

    /** Where libphoenix came from: a file, or the jar resource whose extracted copy is gone. */
    static final String LOADED_FROM;
    private static final SymbolLookup PHOENIX;
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    private static final MethodHandle LAST_ERROR;

    static {
        String explicit = explicitPath();
        if (explicit != null) {
            Path p = Path.of(explicit).toAbsolutePath();
            if (!Files.isRegularFile(p)) {
                throw new UnsatisfiedLinkError("libphoenix not found at " + p + " (from "
                        + LIBRARY_PATH_PROPERTY + " / " + LIBRARY_PATH_ENV + ")");
            }
            LOADED_FROM = p.toString();
            PHOENIX = SymbolLookup.libraryLookup(p, Arena.global());
        } else {
            String[] from = new String[1];
            PHOENIX = loadFromJar(from);
            LOADED_FROM = from[0];
        }
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

    private static String explicitPath() {
        String explicit = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (explicit == null || explicit.isBlank()) {
            explicit = System.getenv(LIBRARY_PATH_ENV);
        }
        return explicit == null || explicit.isBlank() ? null : explicit;
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

    /**
     * Copies the jar's libphoenix.so to a private directory, dlopens it and unlinks it at once:
     * the mapping keeps the file alive, so nothing is left in the temporary directory however
     * the JVM ends (SIGKILL included; deleteOnExit only ran on a normal exit, and every killed
     * JVM used to leave a folder behind). {@code from[0]} receives the resource's URL.
     */
    private static SymbolLookup loadFromJar(String[] from) {
        String resource = "native/" + platform() + "/libphoenix.so";
        ClassLoader loader = NativeLibrary.class.getClassLoader();
        java.net.URL url = loader == null ? ClassLoader.getSystemResource(resource) : loader.getResource(resource);
        if (url == null) {
            throw new UnsatisfiedLinkError("no " + resource + " on the class path (is phoenix-native "
                    + "built for " + platform() + "?); set " + LIBRARY_PATH_PROPERTY + " or "
                    + LIBRARY_PATH_ENV + " to a libphoenix.so");
        }
        Path dir = null;
        Path lib = null;
        try (InputStream in = url.openStream()) {
            // A private directory rather than a predictable name: another user must not be able
            // to plant a library there between our write and the dlopen.
            dir = Files.createTempDirectory("phoenix-native-");
            lib = dir.resolve("libphoenix.so");
            Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            SymbolLookup lookup = SymbolLookup.libraryLookup(lib, Arena.global());
            from[0] = url.toString();
            return lookup;
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("cannot extract " + resource + " into "
                    + (dir != null ? dir : System.getProperty("java.io.tmpdir")) + ": " + e);
            err.initCause(e);
            throw err;
        } finally {
            deleteQuietly(lib);
            deleteQuietly(dir);
        }
    }

    private static void deleteQuietly(Path p) {
        if (p == null) {
            return;
        }
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            // nothing to report to: the library is loaded, or its load failure is being thrown;
            // only deleteOnExit remains
            p.toFile().deleteOnExit();
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
