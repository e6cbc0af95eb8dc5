/**
 * The Java bindings over libphoenix. The one module that links native code, so that an
 * application grants {@code --enable-native-access=io.phxfs.core} (plus io.phxfs.safetensors
 * when it loads weights) rather than ALL-UNNAMED.
 */
module io.phxfs.core {
    requires io.phxfs.libphoenix;

    exports io.phxfs.core;
}
