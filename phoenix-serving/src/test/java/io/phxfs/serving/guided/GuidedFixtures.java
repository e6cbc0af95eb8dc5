package io.phxfs.serving.guided;

import java.nio.file.Files;
import java.nio.file.Path;

/** The tokenizers of testdata/fixtures (phx.fixtures, else phx.fixtures.fallback); a missing directory fails the test. */
final class GuidedFixtures {
    private GuidedFixtures() {
    }

    static Path fixture(String name) {
        for (String key : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String v = System.getProperty(key);
            if (v != null && !v.isBlank() && Files.isDirectory(Path.of(v))) {
                return Path.of(v).resolve(name);
            }
        }
        throw new IllegalStateException("fixtures not found: -Dphx.fixtures=" + System.getProperty("phx.fixtures")
                + ", fallback " + System.getProperty("phx.fixtures.fallback"));
    }
}
