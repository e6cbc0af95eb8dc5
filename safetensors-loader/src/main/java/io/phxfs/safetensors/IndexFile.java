package io.phxfs.safetensors;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.phxfs.core.FileOperationException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A sharded model's {@code model.safetensors.index.json}: its {@code weight_map} from tensor
 * name to shard file, with every shard confined to the index's directory.
 */
final class IndexFile {
    private IndexFile() {
    }

    private static final String NOT_AN_INDEX = "a JSON file that is not a safetensors index: ";

    /** Fields shown of a JSON object that is not an index. */
    private static final int FIELDS_SHOWN = 6;

    /** Tensor name to the shard's normalised path, in the order of the index. */
    static Map<String, Path> read(Path index, long maxBytes) throws IOException {
        byte[] bytes;
        SafetensorsParser.refuseSpecialFile(index);
        FileChannel channel;
        try {
            channel = FileChannel.open(index, StandardOpenOption.READ);
        } catch (IOException e) {
            throw FileOperationException.of("open", index, e);
        }
        try (FileChannel ch = channel) {
            long size = ch.size();
            if (size > maxBytes) {
                throw new SafetensorsFormatException(index, null, "index is " + size + " bytes, over the limit of "
                        + maxBytes);
            }
            ByteBuffer b = ByteBuffer.allocate((int) size);
            // local files in pieces, as headers are read (SafetensorsParser.READ_PIECE): a read
            // into the heap goes through a temporary direct buffer of its size, 8.8 MB of fresh
            // memory faulted in for a 96,000-tensor index; an object store's in one request
            boolean pieces = index.getFileSystem() == java.nio.file.FileSystems.getDefault();
            while (b.hasRemaining()) {
                if (pieces) {
                    b.limit(b.position() + Math.min(SafetensorsParser.READ_PIECE, b.capacity() - b.position()));
                }
                int r = ch.read(b, b.position());
                b.limit(b.capacity());
                if (r <= 0) {
                    break; // a file that shrinks meanwhile ends the loop; what was read is checked as JSON
                }
            }
            bytes = b.hasRemaining() ? Arrays.copyOf(b.array(), b.position()) : b.array();
        } catch (IOException e) {
            throw FileOperationException.of("read", index, e);
        }
        if (bytes.length >= 3 && (bytes[0] & 0xff) == 0xef && (bytes[1] & 0xff) == 0xbb && (bytes[2] & 0xff) == 0xbf) {
            // an index all the same, which the sniffing below would call "JSON text, not an index";
            // refused as the header's is: Python's json.load (how transformers reads an index) refuses it
            throw new SafetensorsFormatException(index, null, "starts with a UTF-8 byte order mark (bytes EF BB BF);"
                    + " a JSON index must begin with '{': write the file again without the byte order mark");
        }
        if (!startsLikeJson(bytes)) {
            // a safetensors file, an archive or prose named .json: say which, not where JSON broke
            int n = Math.min(bytes.length, FileKind.SNIFF_BYTES);
            String kind = FileKind.looksLikeSafetensors(bytes, n)
                    ? "it is a safetensors file (load it by a name ending in .safetensors)"
                    : FileKind.describe(bytes, n, bytes.length);
            if (kind != null) {
                throw new SafetensorsFormatException(index, null, "not a safetensors index: " + kind);
            }
        }
        long bad = Utf8.firstInvalid(bytes, bytes.length);
        if (bad >= 0) {
            throw new SafetensorsFormatException(index, null, "index is not valid UTF-8 (at byte " + bad + ")");
        }
        return weightMap(bytes, index, true);
    }

    /**
     * The weight_map of an index's bytes (valid UTF-8, no byte order mark); {@code fast}: try
     * {@link FastIndexJson} first (tests compare the two ways on the same bytes).
     */
    static Map<String, Path> weightMap(byte[] bytes, Path index, boolean fast) throws IOException {
        Path dir = directoryOf(index);
        // the usual shape at byte speed; anything else (or anything wrong) through Jackson,
        // which names what is at fault
        FastIndexJson.Parsed usual = fast ? FastIndexJson.parse(bytes) : null;
        if (usual != null) {
            Map<String, Path> m = weightMap(usual, index, dir);
            if (m != null) {
                if (m.isEmpty()) {
                    throw new SafetensorsFormatException(index, "field weight_map", "is empty");
                }
                return m;
            }
        }
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
                .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
                .build();
        Map<String, Path> weightMap = null;
        List<String> fields = new ArrayList<>();
        try (JsonParser p = factory.createParser(bytes)) {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_OBJECT) {
                throw new SafetensorsFormatException(index, null, NOT_AN_INDEX + "index is not a JSON object ("
                        + (t == JsonToken.START_ARRAY ? "an array" : "a single value") + " at the top)");
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                fields.add(field);
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
            throw new SafetensorsFormatException(index, null, "index is not valid JSON: " + HeaderJson.plain(e, null, 0), e);
        }
        if (weightMap == null) {
            // config.json, tokenizer.json...: a model directory holds several JSON files
            throw new SafetensorsFormatException(index, null, NOT_AN_INDEX + "no weight_map among its fields "
                    + fieldList(fields) + " (give the model directory or its .safetensors file)");
        }
        if (weightMap.isEmpty()) {
            throw new SafetensorsFormatException(index, "field weight_map", "is empty");
        }
        return weightMap;
    }

    /** The first non-blank byte opens a JSON object or array (what an index starts with). */
    private static boolean startsLikeJson(byte[] bytes) {
        for (byte b : bytes) {
            if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
                return b == '{' || b == '[';
            }
        }
        return true; // empty or blank: the JSON parser's own message fits
    }

    private static String fieldList(List<String> fields) {
        if (fields.isEmpty()) {
            return "(it has none)";
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(fields.size(), FIELDS_SHOWN); i++) {
            b.append(i == 0 ? "" : ", ").append(Names.quote(fields.get(i)));
        }
        if (fields.size() > FIELDS_SHOWN) {
            b.append(" and ").append(fields.size() - FIELDS_SHOWN).append(" more");
        }
        return b.toString();
    }

    private static Map<String, Path> weightMap(JsonParser p, JsonToken t, Path index, Path dir) throws IOException {
        if (t != JsonToken.START_OBJECT) {
            throw new SafetensorsFormatException(index, "field weight_map", "is not an object of tensor name to file");
        }
        Map<String, Path> m = new LinkedHashMap<>();
        // a 96,000-tensor index names each of its 160 shards 600 times: each name is checked
        // and looked up on disk once, and messages are made only for an error
        Map<String, Path> shards = new HashMap<>();
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            if (p.nextToken() != JsonToken.VALUE_STRING) {
                throw new SafetensorsFormatException(index, subject(name), "the shard is not given as a file name string");
            }
            String file = p.getText();
            Path shard = shards.get(file);
            if (shard == null) {
                shard = shard(file, index, dir, subject(name));
                shards.put(file, shard);
            }
            if (m.put(name, shard) != null) {
                throw new SafetensorsFormatException(index, subject(name), "appears twice");
            }
        }
        return m;
    }

    /**
     * The fast reader's entries as {@link #weightMap(JsonParser, JsonToken, Path, Path)} makes
     * Jackson's, the same shard errors thrown for the same first entry; null for a name listed
     * twice (Jackson's path then reports it where it appears).
     */
    private static Map<String, Path> weightMap(FastIndexJson.Parsed fast, Path index, Path dir) throws IOException {
        Map<String, Path> m = LinkedHashMap.newLinkedHashMap(fast.names().size()); // no rehash on the way up
        Map<String, Path> shards = new HashMap<>();
        String lastFile = null;
        Path lastShard = null;
        List<String> names = fast.names();
        List<String> files = fast.files();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            String file = files.get(i);
            Path shard;
            if (file == lastFile) {
                shard = lastShard; // the reader gives a run of one shard's entries one String
            } else {
                shard = shards.get(file);
                if (shard == null) {
                    shard = shard(file, index, dir, subject(name));
                    shards.put(file, shard);
                }
                lastFile = file;
                lastShard = shard;
            }
            if (m.put(name, shard) != null) {
                return null;
            }
        }
        return m;
    }

    private static String subject(String tensor) {
        return "weight_map entry " + Names.quote(tensor);
    }

    /** Resolves a shard name, refusing any that could leave the directory of the index. */
    private static Path shard(String name, Path index, Path dir, String subject) throws IOException {
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
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(resolved, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            String link = ModelFiles.danglingLink(resolved);
            throw new SafetensorsFormatException(index, subject, shown + " does not exist (no file " + resolved
                    + (link == null ? "" : ": " + link) + ")");
        } catch (IOException e) {
            // there, perhaps, but out of reach: that is no fault of the index
            throw FileOperationException.of("open", resolved, e);
        }
        if (a.isDirectory()) {
            throw new SafetensorsFormatException(index, subject, shown + " is a directory (" + resolved + ")");
        }
        if (!a.isRegularFile()) {
            throw new SafetensorsFormatException(index, subject, shown + " is not a regular file (" + resolved + ")");
        }
        return resolved;
    }

    static Path directoryOf(Path file) {
        Path parent = file.toAbsolutePath().getParent();
        return parent == null ? file.toAbsolutePath().getRoot() : parent;
    }
}
