package io.phxfs.djl;

import ai.djl.engine.Engine;
import java.nio.file.Path;

/**
 * Starts DJL's PyTorch engine for this module: offline by default, so that the engine takes
 * libtorch from the {@code pytorch-native-cpu} jar on the class path (or from
 * {@code PYTORCH_LIBRARY_PATH}) and never downloads; the natives are extracted once into
 * {@code DJL_CACHE_DIR} (environment variable or system property), which the build sets to a
 * directory it controls.
 */
public final class DjlRuntime {
    /** The engine name DJL registers the PyTorch engine under. */
    public static final String ENGINE = "PyTorch";

    private DjlRuntime() {
    }

    /**
     * The PyTorch engine, started offline unless {@code DJL_OFFLINE} or {@code ai.djl.offline}
     * says otherwise.
     *
     * @return the engine
     * @throws IllegalStateException when libtorch cannot be loaded (the message names what is missing)
     */
    public static Engine pytorch() {
        if (System.getenv("DJL_OFFLINE") == null && System.getProperty("ai.djl.offline") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
        try {
            return Engine.getEngine(ENGINE);
        } catch (RuntimeException e) {
            throw new IllegalStateException("DJL's PyTorch engine did not start (offline; natives from the "
                    + "ai.djl.pytorch:pytorch-native-cpu jar into DJL_CACHE_DIR=" + cacheDir()
                    + ", or PYTORCH_LIBRARY_PATH): " + e.getMessage(), e);
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
