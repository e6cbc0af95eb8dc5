package io.phxfs.djl;

import ai.djl.engine.Engine;
import java.nio.file.Path;

/**
 * Starts DJL's PyTorch engine for this module. Offline operation is the application's choice
 * ({@code DJL_OFFLINE=true}, or {@link #preferOffline()}): the engine then takes libtorch from
 * the {@code pytorch-native-cpu} jar on the class path (or from {@code PYTORCH_LIBRARY_PATH})
 * and never downloads; the natives are extracted once into {@code DJL_CACHE_DIR} (environment
 * variable or system property), which the build sets to a directory it controls.
 */
public final class DjlRuntime {
    /** The engine name DJL registers the PyTorch engine under. */
    public static final String ENGINE = "PyTorch";

    private DjlRuntime() {
    }

    /**
     * The PyTorch engine (started if it is not yet). This changes no DJL setting: an
     * application that wants no download at all sets {@code DJL_OFFLINE=true} (or calls
     * {@link #preferOffline()}) and puts the native jar on the class path.
     *
     * @return the engine
     * @throws IllegalStateException when libtorch cannot be loaded (the message names what is missing)
     */
    public static Engine pytorch() {
        try {
            return Engine.getEngine(ENGINE);
        } catch (RuntimeException e) {
            throw new IllegalStateException("DJL's PyTorch engine did not start (natives from the "
                    + "ai.djl.pytorch:pytorch-native-cpu jar into DJL_CACHE_DIR=" + cacheDir()
                    + ", or PYTORCH_LIBRARY_PATH): " + e.getMessage(), e);
        }
    }

    /**
     * For applications (the CLI calls it before DJL starts): DJL offline unless
     * {@code DJL_OFFLINE}/{@code ai.djl.offline} says otherwise, and, without the native jar on
     * the class path and without {@code PYTORCH_LIBRARY_PATH}, the libtorch 2.7.1 a run with the
     * jar extracted into the cache directory earlier. Both are process-wide DJL settings, which
     * is why the library itself never calls this.
     */
    public static void preferOffline() {
        if (System.getenv("DJL_OFFLINE") == null && System.getProperty("ai.djl.offline") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
        useExtractedLibtorch();
    }

    /** The libtorch version DJL 0.36's JNI is built against. */
    static final String LIBTORCH_VERSION = "2.7.1";

    /**
     * Without the native jar on the class path (the CLI's jar leaves it out: 111 MB) and without
     * PYTORCH_LIBRARY_PATH, DJL offline looks for a libtorch it downloaded itself and finds none,
     * although a run with the jar extracted one into the cache directory: point it there.
     */
    private static void useExtractedLibtorch() {
        if (ai.djl.util.Utils.getEnvOrSystemProperty("PYTORCH_LIBRARY_PATH") != null
                || DjlRuntime.class.getClassLoader().getResource("pytorch/cpu/linux-x86_64/libtorch_cpu.so") != null
                || Thread.currentThread().getContextClassLoader() != null
                && Thread.currentThread().getContextClassLoader().getResource("pytorch/cpu/linux-x86_64/libtorch_cpu.so") != null) {
            return;
        }
        Path root = ai.djl.util.Utils.getEngineCacheDir("pytorch");
        try (java.util.stream.Stream<Path> dirs = java.nio.file.Files.list(root)) {
            dirs.filter(d -> d.getFileName().toString().startsWith(LIBTORCH_VERSION + "-")
                            && d.getFileName().toString().endsWith("-cpu-linux-x86_64")
                            && java.nio.file.Files.isRegularFile(d.resolve("libtorch_cpu.so")))
                    .sorted().findFirst()
                    .ifPresent(d -> System.setProperty("PYTORCH_LIBRARY_PATH", d.toString()));
        } catch (java.io.IOException e) {
            // no cache directory yet: DJL reports what it looked for
        }
    }

    /**
     * Where DJL extracts (and finds) the engine's natives.
     *
     * @return the cache directory DJL uses
     */
    public static Path cacheDir() {
        return ai.djl.util.Utils.getEngineCacheDir();
    }

    /**
     * The directory of the libtorch the engine loaded.
     *
     * @return the libtorch directory
     */
    public static Path libtorchDir() {
        pytorch();
        return Path.of(ai.djl.pytorch.jni.LibUtils.getLibtorchPath());
    }
}
