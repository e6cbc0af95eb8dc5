package io.phxfs.serving.tools;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.MinimalPrettyPrinter;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The JSON of calls in model output: a call object read from text, and its arguments written
 * back as vLLM writes them ({@code json.dumps(arguments, ensure_ascii=False)}: separators
 * {@code ", "} and {@code ": "}, non-ASCII as is), so that clients see the same strings.
 */
final class CallJson {
    private CallJson() {
    }

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    /** For a value followed by more text (Llama's {@code ;} between calls). */
    private static final ObjectMapper PREFIX = new ObjectMapper();

    /** Python's json.dumps separators on one line. */
    private static final MinimalPrettyPrinter PYTHON = new MinimalPrettyPrinter() {
        @Override
        public void writeObjectFieldValueSeparator(JsonGenerator g) throws IOException {
            g.writeRaw(": ");
        }

        @Override
        public void writeObjectEntrySeparator(JsonGenerator g) throws IOException {
            g.writeRaw(", ");
        }

        @Override
        public void writeArrayValueSeparator(JsonGenerator g) throws IOException {
            g.writeRaw(", ");
        }
    };

    /** A call read from its JSON: name and arguments, the arguments as JSON text. */
    record Parsed(String name, String arguments) {
    }

    /**
     * The one JSON value that {@code text} holds (whitespace around it allowed), or null when it
     * is not exactly one value.
     */
    static JsonNode value(String text) {
        if (text.isBlank()) {
            return null;
        }
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    /**
     * The JSON value starting at {@code from} (after any whitespace) and where it ends, or null
     * when none parses there.
     */
    static Span valueAt(String text, int from) {
        try (JsonParser p = PREFIX.createParser(text.substring(from))) {
            if (p.nextToken() == null) {
                return null;
            }
            JsonNode n = PREFIX.readTree(p);
            return new Span(n, from + (int) p.currentLocation().getCharOffset());
        } catch (IOException e) {
            return null;
        }
    }

    /** A value and the offset just past it. */
    record Span(JsonNode value, int end) {
    }

    /**
     * A call object: a non-empty string {@code name} and arguments under the first of
     * {@code argumentFields} present, an object (or a string holding one, as some models write
     * them), absent or null meaning none. Anything else is not a call: null.
     */
    static Parsed call(JsonNode n, String... argumentFields) {
        if (n == null || !n.isObject()) {
            return null;
        }
        JsonNode name = n.get("name");
        if (name == null || !name.isTextual() || name.textValue().isBlank()) {
            return null;
        }
        JsonNode args = null;
        for (String f : argumentFields) {
            if (n.has(f)) {
                args = n.get(f);
                break;
            }
        }
        if (args == null || args.isNull()) {
            return new Parsed(name.textValue(), "{}");
        }
        if (args.isTextual()) {
            args = value(args.textValue());
        }
        if (args == null || !args.isObject()) {
            return null;
        }
        return new Parsed(name.textValue(), dumps(args));
    }

    /** Python's json.dumps(value, ensure_ascii=False). */
    static String dumps(JsonNode value) {
        try {
            return JSON.writer(PYTHON).writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
