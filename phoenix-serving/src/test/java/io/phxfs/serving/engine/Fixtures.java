package io.phxfs.serving.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The checkpoints of testdata/fixtures (phx.fixtures, else phx.fixtures.fallback). */
final class Fixtures {
    private Fixtures() {
    }

    static Path dir(String name) {
        for (String prop : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String d = System.getProperty(prop);
            if (d != null && Files.isDirectory(Path.of(d, name))) {
                return Path.of(d, name);
            }
        }
        throw new IllegalStateException("fixture " + name + " not found under phx.fixtures=" + System.getProperty("phx.fixtures")
                + " or phx.fixtures.fallback=" + System.getProperty("phx.fixtures.fallback"));
    }

    static JsonNode reference(String name) {
        try {
            return new ObjectMapper().readTree(dir(name).resolve("reference.json").toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).intValue();
        }
        return out;
    }
}
