package io.phxfs.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;


/**
 * The reference fixtures in testdata/fixtures (testdata/README.md; written by torch, safetensors and
 * transformers) and their reference.json. Shared with the CLI tests through the test jar.
 */
public final class Fixtures {
    /** One tensor as reference.json records it, the dtype mapped from its torch name. */
    public record RefTensor(Dtype dtype, long[] shape, long nbytes, String sha256) {
    }

    /** One file of reference.json. */
    public record RefFile(Map<String, String> metadata, Map<String, RefTensor> tensors) {
    }

    private static Map<String, RefFile> reference;

    private Fixtures() {
    }

    /** The fixture directory (testdata/fixtures); a missing one fails the test, never skips it. */
    public static Path dir() {
        Path d = locate();
        if (d == null) {
            throw new IllegalStateException("fixtures not found: neither -Dphx.fixtures=" + System.getProperty("phx.fixtures")
                    + " nor " + System.getProperty("phx.fixtures.fallback") + " is a directory (expected testdata/fixtures"
                    + " in the repository)");
        }
        return d;
    }

    private static Path locate() {
        for (String key : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String v = System.getProperty(key);
            if (v != null && !v.isBlank() && Files.isDirectory(Path.of(v))) {
                return Path.of(v).toAbsolutePath().normalize();
            }
        }
        Path guess = Path.of("").toAbsolutePath();
        for (int i = 0; i < 4 && guess != null; i++, guess = guess.getParent()) {
            Path d = guess.resolve("testdata/fixtures");
            if (Files.isDirectory(d)) {
                return d;
            }
        }
        return null;
    }

    public static Path file(String relative) {
        return dir().resolve(relative);
    }

    /** reference.json by file path relative to the fixture directory, sorted. */
    public static synchronized Map<String, RefFile> reference() {
        if (reference == null) {
            try {
                JsonNode root = new ObjectMapper().readTree(dir().resolve("reference.json").toFile());
                Map<String, RefFile> files = new TreeMap<>();
                for (Map.Entry<String, JsonNode> f : root.properties()) {
                    Map<String, String> meta = new LinkedHashMap<>();
                    f.getValue().path("metadata").properties().forEach(e -> meta.put(e.getKey(), e.getValue().asText()));
                    Map<String, RefTensor> tensors = new TreeMap<>();
                    for (Map.Entry<String, JsonNode> t : f.getValue().path("tensors").properties()) {
                        JsonNode n = t.getValue();
                        String torch = n.path("dtype").asText();
                        Dtype dtype = Dtype.fromTorchName(torch)
                                .orElseThrow(() -> new IllegalStateException("reference.json: unknown torch dtype " + torch));
                        long[] shape = new long[n.path("shape").size()];
                        for (int i = 0; i < shape.length; i++) {
                            shape[i] = n.path("shape").get(i).asLong();
                        }
                        tensors.put(t.getKey(), new RefTensor(dtype, shape, n.path("nbytes").asLong(),
                                n.path("sha256").asText()));
                    }
                    files.put(f.getKey(), new RefFile(meta, tensors));
                }
                reference = files;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return reference;
    }
}
