package io.phxfs.serving.text;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** testdata/fixtures (see testdata/fixtures/README.md); a missing directory fails the test, never skips it. */
final class TestFixtures {
    static final String LLAMA = "tiny-chat-llama";
    static final String GPT2 = "tiny-chat-gpt2";

    private TestFixtures() {
    }

    static Path dir() {
        for (String key : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String v = System.getProperty(key);
            if (v != null && !v.isBlank() && Files.isDirectory(Path.of(v))) {
                return Path.of(v).toAbsolutePath().normalize();
            }
        }
        throw new IllegalStateException("fixtures not found: -Dphx.fixtures=" + System.getProperty("phx.fixtures")
                + ", fallback " + System.getProperty("phx.fixtures.fallback"));
    }

    static Path model(String name) {
        return dir().resolve(name);
    }

    static JsonNode reference(String name) {
        try {
            return new ObjectMapper().readTree(model(name).resolve("reference.json").toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }
}
