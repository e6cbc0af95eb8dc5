package io.phxfs.safetensors;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A sharded model's {@code model.safetensors.index.json}: its {@code weight_map} from tensor
 * name to shard file, with every shard confined to the index's directory.
 */
final class IndexFile {
    private IndexFile() {
    }

    /** Tensor name to the shard's normalised path, in the order of the index. */
    static Map<String, Path> read(Path index, long maxBytes) throws IOException {
        long size = Files.size(index);
        if (size > maxBytes) {
            throw new SafetensorsFormatException(index, null, "index is " + size + " bytes, over the limit of "
                    + maxBytes);
        }
        byte[] bytes = Files.readAllBytes(index);
        long bad = Utf8.firstInvalid(bytes, bytes.length);
        if (bad >= 0) {
            throw new SafetensorsFormatException(index, null, "index is not valid UTF-8 (at byte " + bad + ")");
        }
        Path dir = directoryOf(index);
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
                .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
                .build();
        Map<String, Path> weightMap = null;
        try (JsonParser p = factory.createParser(bytes)) {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_OBJECT) {
                throw new SafetensorsFormatException(index, null, "index is not a JSON object");
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                t = p.nextToken();
                if (!"weight_map".equals(field)) {
                    p.skipChildren(); // "metadata" and anything a newer writer adds
                    continue;
                }
                if (weightMap != null) {
                    throw new SafetensorsFormatException(index, "field weight_map", "appears twice");
                }
                weightMap = weightMap(p, t, index, dir);
            }
            if (p.nextToken() != null) {
                throw new SafetensorsFormatException(index, null, "trailing data after the index's JSON object");
            }
        } catch (JacksonException e) {
            throw new SafetensorsFormatException(index, null, "index is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (weightMap == null) {
            throw new SafetensorsFormatException(index, null, "no weight_map");
        }
        if (weightMap.isEmpty()) {
            throw new SafetensorsFormatException(index, "field weight_map", "is empty");
        }
        return weightMap;
    }

    private static Map<String, Path> weightMap(JsonParser p, JsonToken t, Path index, Path dir) throws IOException {
        if (t != JsonToken.START_OBJECT) {
            throw new SafetensorsFormatException(index, "field weight_map", "is not an object of tensor name to file");
        }
        Map<String, Path> m = new LinkedHashMap<>();
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            String subject = "weight_map entry " + Names.quote(name);
            if (p.nextToken() != JsonToken.VALUE_STRING) {
                throw new SafetensorsFormatException(index, subject, "the shard is not given as a file name string");
            }
            Path shard = shard(p.getText(), index, dir, subject);
            if (m.put(name, shard) != null) {
                throw new SafetensorsFormatException(index, subject, "appears twice");
            }
        }
        return m;
    }

    /** Resolves a shard name, refusing any that could leave the directory of the index. */
    private static Path shard(String name, Path index, Path dir, String subject) {
        String shown = "shard " + Names.quote(name);
        if (name.isEmpty()) {
            throw new SafetensorsFormatException(index, subject, "empty shard file name");
        }
        Path p;
        try {
            p = Path.of(name);
        } catch (InvalidPathException e) {
            throw new SafetensorsFormatException(index, subject, shown + " is not a valid file name");
        }
        if (p.isAbsolute() || name.startsWith("/")) {
            throw new SafetensorsFormatException(index, subject, shown
                    + " is an absolute path; shards must lie in the model directory");
        }
        for (Path element : p) {
            if (element.toString().equals("..")) {
                throw new SafetensorsFormatException(index, subject, shown + " leaves the model directory");
            }
        }
        Path resolved = dir.resolve(p).normalize();
        if (!resolved.startsWith(dir.normalize())) {
            throw new SafetensorsFormatException(index, subject, shown + " leaves the model directory");
        }
        if (!Files.isRegularFile(resolved)) {
            throw new SafetensorsFormatException(index, subject, shown + " does not exist (no file " + resolved + ")");
        }
        return resolved;
    }

    static Path directoryOf(Path file) {
        Path parent = file.toAbsolutePath().getParent();
        return parent == null ? file.toAbsolutePath().getRoot() : parent;
    }
}
