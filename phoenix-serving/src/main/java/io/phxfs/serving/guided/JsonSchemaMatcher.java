package io.phxfs.serving.guided;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Objects;

/**
 * Decides, byte by byte, whether output can still become JSON that matches a JSON Schema: the
 * matcher behind guided (structured-output) decoding, where each decode step masks the tokens whose
 * bytes no valid output can continue with.
 *
 * <p>Semantics follow vLLM's structured outputs with xgrammar, strict by default: UTF-8 JSON with
 * whitespace between tokens (each run at most 64 bytes), numbers of at most 32 bytes, object
 * properties in the order the schema lists them, no properties beyond the declared ones unless
 * {@code additionalProperties} allows them, enum and const values written as their compact JSON.
 * Formats {@code date}, {@code time}, {@code date-time}, {@code uuid}, {@code email},
 * {@code hostname}, {@code ipv4} and {@code uri} ({@link RegexFormats}), bounds on integers and
 * {@code pattern} (matched whole, as xgrammar does, in the syntax {@link TextGrammar#regex} reads,
 * by characters a string holds unescaped) are enforced byte by byte; keywords it cannot enforce
 * ({@code multipleOf}, bounds on other numbers, ...) make {@link #compile} throw rather than be
 * ignored.
 *
 * <p>A matcher is immutable and may be shared between threads and requests.
 */
public final class JsonSchemaMatcher implements OutputGrammar {
    private static final JsonSchemaMatcher ANY_OBJECT = new JsonSchemaMatcher(SchemaNode.of("", AnyValue.OBJECT));

    private final MatchState start;

    private JsonSchemaMatcher(SchemaNode root) {
        this.start = MatchState.initial(root);
    }

    /**
     * Compiles a JSON Schema (or returns the matcher compiled lately for the same schema).
     *
     * @param schema the schema (an object, or {@code true} / {@code false})
     * @return the matcher for it
     * @throws UnsupportedSchemaException naming the JSON pointer and keyword of anything it cannot enforce
     */
    public static JsonSchemaMatcher compile(JsonNode schema) {
        Objects.requireNonNull(schema, "schema");
        return CompiledGrammars.get("json " + schema, () -> new JsonSchemaMatcher(SchemaCompiler.compile(schema)));
    }

    /**
     * Any JSON object at the top level, with any values inside: OpenAI's {@code response_format}
     * {@code json_object}.
     *
     * @return the matcher
     */
    public static JsonSchemaMatcher anyObject() {
        return ANY_OBJECT;
    }

    @Override
    public MatchState start() {
        return start;
    }
}
