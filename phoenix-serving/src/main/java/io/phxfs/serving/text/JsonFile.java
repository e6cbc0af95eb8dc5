package io.phxfs.serving.text;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A checkpoint's JSON files, read so that every failure names the file and, past parsing, the
 * field: a serving log line has to say which of a model directory's files is wrong.
 */
final class JsonFile {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private final Path path;
    private final JsonNode root;

    private JsonFile(Path path, JsonNode root) {
        this.path = path;
        this.root = root;
    }

    /** The file's text; a missing or unreadable file names the path and the operating system's reason. */
    static String readText(Path path) throws IOException {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new IOException(path + ": " + reason(e), e);
        }
    }

    static JsonFile read(Path path) throws IOException {
        return parse(path, readText(path));
    }

    /** Empty when the file does not exist; any other failure is an error. */
    static Optional<JsonFile> readIfPresent(Path path) throws IOException {
        return Files.exists(path) ? Optional.of(read(path)) : Optional.empty();
    }

    static JsonFile parse(Path path, String text) throws IOException {
        try {
            JsonNode root = MAPPER.readTree(text);
            if (root == null || !root.isObject()) {
                throw new IOException(path + ": not a JSON object");
            }
            return new JsonFile(path, root);
        } catch (JsonProcessingException e) {
            throw new IOException(path + ": not valid JSON (line " + e.getLocation().getLineNr() + ", column "
                    + e.getLocation().getColumnNr() + "): " + e.getOriginalMessage(), e);
        }
    }

    Path path() {
        return path;
    }

    JsonNode root() {
        return root;
    }

    /** An error about {@code field} of this file. */
    IOException fieldError(String field, String problem) {
        return new IOException(path + ": field \"" + field + "\": " + problem);
    }

    /** What a JSON value is, for error messages. */
    static String describe(JsonNode node) {
        if (node.isTextual()) {
            return "the string " + node;
        }
        return node.getNodeType().name().toLowerCase(java.util.Locale.ROOT) + " " + abbreviate(node.toString());
    }

    private static String abbreviate(String s) {
        return s.length() <= 60 ? s : s.substring(0, 57) + "...";
    }

    private static String reason(IOException e) {
        if (e instanceof NoSuchFileException) {
            return "No such file or directory";
        }
        if (e instanceof AccessDeniedException) {
            return "Permission denied";
        }
        if (e instanceof FileSystemException fse && fse.getReason() != null) {
            return fse.getReason();
        }
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }
}
