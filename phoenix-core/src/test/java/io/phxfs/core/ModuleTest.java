package io.phxfs.core;

import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Surefire patches these tests into io.phxfs.core, and the build grants native access to that
 * module alone with every other caller denied: the bindings working at all here shows that an
 * application can run them with {@code --enable-native-access=io.phxfs.core}. These checks say
 * why, where a lost or changed module descriptor would otherwise surface as a refused
 * restricted call deep in NativeLibrary's initialiser.
 */
class ModuleTest {
    @Test
    void bindingsAreTheNamedModuleThatHoldsNativeAccess() {
        Module m = Phoenix.class.getModule();
        assertTrue(m.isNamed(), "phoenix-core ran in the unnamed module: module-info.class missing?");
        assertEquals("io.phxfs.core", m.getName());
        assertTrue(m.isNativeAccessEnabled(), "io.phxfs.core lacks native access (test argLine)");
        ModuleDescriptor d = m.getDescriptor();
        assertEquals(Set.of("io.phxfs.core"),
                d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()),
                "only the API package is exported, unqualified");
        assertTrue(d.requires().stream().anyMatch(r -> r.name().equals("io.phxfs.libphoenix")));
    }

    @Test
    void libphoenixIsFoundThroughTheModuleGraph() throws java.io.IOException {
        // The resource lives in io.phxfs.libphoenix (another jar, another module); its extracted
        // copy is unlinked once loaded, so libraryPath names the resource, unless a developer
        // pointed phx.library.path at a file
        Phoenix phx = Phoenix.open();
        String from = phx.libraryPath();
        if (System.getProperty("phx.library.path") == null && System.getenv("PHX_LIBRARY_PATH") == null) {
            assertTrue(from.startsWith("jar:") && from.endsWith("!/native/" + NativeLibrary.platform() + "/libphoenix.so"), from);
            // mapped, but no longer in any directory: a killed JVM leaves nothing behind
            String maps = Files.readString(Path.of("/proc/self/maps"));
            assertTrue(maps.lines().anyMatch(l -> l.contains("/libphoenix.so (deleted)")), "libphoenix still has a name");
        } else {
            assertTrue(Files.isRegularFile(Path.of(from)), from);
        }
        Module lib = ModuleLayer.boot().findModule("io.phxfs.libphoenix").orElseThrow(
                () -> new AssertionError("io.phxfs.libphoenix not resolved with io.phxfs.core"));
        assertTrue(Phoenix.class.getModule().canRead(lib));
    }
}
