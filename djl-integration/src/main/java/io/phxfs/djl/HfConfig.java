package io.phxfs.djl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A Hugging Face {@code config.json}: the fields the blocks read, with errors that name the
 * file and the field.
 */
public final class HfConfig {
    private final Path file;
    private final Map<String, Object> root;
    /** Where {@link #root} sits in the file, for messages: empty, or {@code text_config.} for a section. */
    private final String prefix;

    private HfConfig(Path file, Map<String, Object> root, String prefix) {
        this.file = file;
        this.root = root;
        this.prefix = prefix;
    }

    /**
     * A nested configuration, as a model's own (a multimodal checkpoint's {@code text_config}):
     * its fields are read as the top level's are, and messages name them with the section.
     *
     * @param name the field holding it
     * @param modelType its model type where the section does not say
     * @return the section
     * @throws IllegalArgumentException when there is none or it is not an object
     */
    public HfConfig section(String name, String modelType) {
        return section(name, modelType, Map.of());
    }

    /**
     * A nested configuration with some fields set as its parent's model reads them (a multimodal
     * model's head tying, say, which its own config decides rather than the text model's).
     *
     * @param name the field holding it
     * @param modelType its model type where the section does not say
     * @param overrides fields to set over the section's (a null value: the field is null)
     * @return the section
     * @throws IllegalArgumentException when there is none or it is not an object
     */
    public HfConfig section(String name, String modelType, Map<String, Object> overrides) {
        Map<String, Object> m = object(name);
        if (m.isEmpty() && !(root.get(name) instanceof Map)) {
            throw new IllegalArgumentException(file + ": no \"" + prefix + name + "\"");
        }
        Map<String, Object> copy = new LinkedHashMap<>(m);
        copy.putIfAbsent("model_type", modelType);
        copy.putAll(overrides);
        // a checkpoint quantized as a whole is quantized in every part
        if (root.get("quantization_config") != null) {
            copy.putIfAbsent("quantization_config", root.get("quantization_config"));
        }
        return new HfConfig(file, copy, prefix + name + ".");
    }

    /**
     * Reads {@code config.json} of a model directory (or the file itself).
     *
     * @param path a model directory or its config.json
     * @return the configuration
     * @throws IOException when it cannot be read or is not a JSON object (the message names the file)
     */
    public static HfConfig read(Path path) throws IOException {
        Path file = Files.isDirectory(path) ? path.resolve("config.json") : path;
        if (!Files.isRegularFile(file)) {
            throw new NoSuchFileException(file.toString(), null,
                    "no config.json: a Hugging Face checkpoint directory has one beside its safetensors");
        }
        // a stream, not a File: config.json may be an S3 object (phoenix:s3:// URLs)
        try (JsonParser p = new JsonFactory().createParser(Files.newInputStream(file))) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException(file + ": not a JSON object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> m = (Map<String, Object>) value(p);
            return new HfConfig(file, m, "");
        } catch (JsonProcessingException e) {
            throw new IOException(file + ": malformed JSON: " + e.getOriginalMessage(), e);
        }
    }

    private static Object value(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        switch (t) {
            case START_OBJECT -> {
                Map<String, Object> m = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String k = p.currentName();
                    p.nextToken();
                    m.put(k, value(p));
                }
                return m;
            }
            case START_ARRAY -> {
                List<Object> l = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    l.add(value(p));
                }
                return l;
            }
            case VALUE_STRING -> {
                return p.getText();
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                return p.getNumberValue();
            }
            case VALUE_TRUE -> {
                return Boolean.TRUE;
            }
            case VALUE_FALSE -> {
                return Boolean.FALSE;
            }
            case VALUE_NULL -> {
                return null;
            }
            default -> throw new IOException("unexpected JSON token " + t);
        }
    }

    /**
     * A field's name as a message should give it: with its section ({@code text_config.x}) when
     * this is one.
     *
     * @param name the field
     * @return where it is in the file
     */
    public String field(String name) {
        return prefix + name;
    }

    /**
     * The file read.
     *
     * @return the config.json path
     */
    public Path file() {
        return file;
    }

    /**
     * {@code model_type}, e.g. {@code gpt2} or {@code llama}.
     *
     * @return the model type
     */
    public String modelType() {
        Object v = root.get("model_type");
        if (v instanceof String s) {
            return s;
        }
        Object a = root.get("architectures");
        if (a instanceof List<?> l && !l.isEmpty() && l.get(0) instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException(file + ": no \"model_type\" (nor \"architectures\")");
    }

    /**
     * A required integer field.
     *
     * @param names the field's names, the first present wins (configs of different models name it differently)
     * @return its value
     * @throws IllegalArgumentException when none is present or it is not a positive integer
     */
    public int integer(String... names) {
        for (String n : names) {
            Object v = root.get(n);
            if (v instanceof Number num) {
                if (num.doubleValue() != num.longValue() || num.longValue() <= 0 || num.longValue() > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException(file + ": \"" + prefix + n + "\" is " + num + ", not a positive integer");
                }
                return num.intValue();
            }
            if (v != null) {
                throw new IllegalArgumentException(file + ": \"" + prefix + n + "\" is " + v + ", not a number");
            }
        }
        throw new IllegalArgumentException(file + ": no \"" + prefix + String.join("\" or \"" + prefix, names) + "\"");
    }

    /**
     * An optional integer field.
     *
     * @param name the field
     * @return its value, empty when absent or null
     */
    public Optional<Integer> optInteger(String name) {
        return root.get(name) == null ? Optional.empty() : Optional.of(integer(name));
    }

    /**
     * A number field with a default.
     *
     * @param name the field
     * @param dflt the value when absent or null
     * @return its value
     */
    public double number(String name, double dflt) {
        Object v = root.get(name);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        throw new IllegalArgumentException(file + ": \"" + prefix + name + "\" is " + v + ", not a number");
    }

    /**
     * A boolean field with a default.
     *
     * @param name the field
     * @param dflt the value when absent or null
     * @return its value
     */
    public boolean bool(String name, boolean dflt) {
        Object v = root.get(name);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        throw new IllegalArgumentException(file + ": \"" + prefix + name + "\" is " + v + ", not true or false");
    }

    /**
     * A string field.
     *
     * @param name the field
     * @return its value, empty when absent or null
     */
    public Optional<String> string(String name) {
        Object v = root.get(name);
        return v == null ? Optional.empty() : Optional.of(String.valueOf(v));
    }

    /**
     * Whether the field is present, null or not (some defaults differ for an absent field and a null one).
     *
     * @param name the field
     * @return whether config.json names it
     */
    public boolean has(String name) {
        return root.containsKey(name);
    }

    /**
     * A field as parsed, for shapes the typed getters do not cover (lists, say).
     *
     * @param name the field
     * @return its value, null when absent or null
     */
    Object value(String name) {
        return root.get(name);
    }

    /**
     * A nested object.
     *
     * @param name the field
     * @return the object's fields, empty when absent or null
     */
    @SuppressWarnings("unchecked")
    public Map<String, Object> object(String name) {
        Object v = root.get(name);
        if (v == null) {
            return Map.of();
        }
        if (v instanceof Map<?, ?> m) {
            return (Map<String, Object>) m;
        }
        throw new IllegalArgumentException(file + ": \"" + prefix + name + "\" is " + v + ", not an object");
    }
}
