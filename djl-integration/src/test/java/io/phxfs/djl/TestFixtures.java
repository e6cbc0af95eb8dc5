package io.phxfs.djl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** testdata/fixtures (see testdata/README.md); a missing directory fails the test, never skips it. */
final class TestFixtures {
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

    static Path file(String relative) {
        return dir().resolve(relative);
    }

    static JsonNode json(String relative) {
        try {
            return new ObjectMapper().readTree(file(relative).toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A 2-D JSON array of numbers as float rows. */
    static float[][] rows(JsonNode n) {
        float[][] out = new float[n.size()][];
        for (int i = 0; i < out.length; i++) {
            JsonNode r = n.get(i);
            out[i] = new float[r.size()];
            for (int j = 0; j < out[i].length; j++) {
                out[i][j] = (float) r.get(j).asDouble();
            }
        }
        return out;
    }

    static long[] longs(JsonNode n) {
        long[] out = new long[n.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = n.get(i).asLong();
        }
        return out;
    }

    /** A fixture checkpoint through the zoo ({@code phoenix://}), ids in, last logits out. */
    static ai.djl.repository.zoo.ZooModel<long[], float[]> zooModel(String dir) throws Exception {
        return ai.djl.repository.zoo.Criteria.builder().setTypes(long[].class, float[].class)
                .optModelUrls("phoenix://" + file(dir)).build().loadModel();
    }

    /** The largest absolute difference of two arrays of the same length. */
    static float maxDiff(float[] a, float[] b) {
        org.junit.jupiter.api.Assertions.assertEquals(a.length, b.length);
        float d = 0;
        for (int i = 0; i < a.length; i++) {
            d = Math.max(d, Math.abs(a[i] - b[i]));
        }
        return d;
    }
}
