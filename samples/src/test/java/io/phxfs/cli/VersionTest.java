package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.phxfs.core.Phoenix;
import org.junit.jupiter.api.Test;

/** One version everywhere: the pom's, the CLI's and the loaded libphoenix's (without -SNAPSHOT). */
class VersionTest {
    static String pomVersion() {
        String v = System.getProperty("phx.project.version");
        assertNotNull(v, "surefire passes phx.project.version (parent pom)");
        return v;
    }

    /** "0.2.0-SNAPSHOT" -> "0.2.0": libphoenix carries the release, not Maven's qualifier. */
    static String release(String version) {
        int dash = version.indexOf('-');
        return dash < 0 ? version : version.substring(0, dash);
    }

    @Test
    void versionPrintsThePomVersionAndTheLoadedLibrarysVersion() {
        Cli r = Cli.run("--version");
        assertEquals(0, r.exit(), r.toString());
        assertEquals("phoenix " + pomVersion() + "\nlibphoenix " + release(pomVersion()) + "\n",
                r.out().replace(System.lineSeparator(), "\n"), r.toString());
    }

    @Test
    void bindingsAndLibraryAgreeWithThePom() {
        assertEquals(pomVersion(), Phoenix.bindingsVersion());
        assertEquals(release(pomVersion()), Phoenix.libraryVersion());
        assertEquals(Phoenix.API_VERSION_MAJOR + "." + Phoenix.API_VERSION_MINOR + "." + Phoenix.API_VERSION_PATCH,
                Phoenix.libraryVersion(), "the bindings' API constants");
    }
}
