package io.phxfs.serving.guided;

import java.util.Map;
import java.util.Set;

/**
 * Which JSON Schema keywords the matcher enforces, which it may ignore because they constrain
 * nothing (annotations), and why it refuses the rest. A keyword in none of these lists is refused
 * too: an unknown keyword might be a constraint, and output that violates the caller's schema is a
 * wrong answer.
 */
final class SchemaKeywords {
    /** Enforced by the compiler. */
    static final Set<String> ENFORCED = Set.of("type", "properties", "required", "additionalProperties", "enum",
            "const", "anyOf", "oneOf", "allOf", "$ref", "items", "prefixItems", "minItems", "maxItems", "minLength",
            "maxLength", "nullable", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern");

    /**
     * Constrain nothing: annotations ({@code example} is OpenAPI's; {@code x-} extensions are
     * accepted by their prefix), and the containers of definitions (compiled where a
     * {@code $ref} uses them). {@code discriminator} is OpenAPI's hint for a {@code oneOf} whose
     * branches carry distinct constant tags, which the branches themselves enforce.
     */
    static final Set<String> IGNORED = Set.of("title", "description", "default", "examples", "example", "$schema", "$id",
            "$comment", "deprecated", "readOnly", "writeOnly", "strict", "discriminator", "$defs", "definitions");

    private static final Map<String, String> REFUSED = Map.ofEntries(
            Map.entry("multipleOf", "numeric multiples are not enforced"),
            Map.entry("uniqueItems", "distinct array items are not enforced"),
            Map.entry("contains", "array contents beyond items and prefixItems are not enforced"),
            Map.entry("minContains", "array contents beyond items and prefixItems are not enforced"),
            Map.entry("maxContains", "array contents beyond items and prefixItems are not enforced"),
            Map.entry("additionalItems", "use prefixItems and items (JSON Schema 2020-12)"),
            Map.entry("unevaluatedItems", "unevaluated items are not enforced"),
            Map.entry("unevaluatedProperties", "unevaluated properties are not enforced"),
            Map.entry("patternProperties", "property names matching a regular expression are not enforced"),
            Map.entry("propertyNames", "constraints on property names are not enforced"),
            Map.entry("minProperties", "property counts are not enforced"),
            Map.entry("maxProperties", "property counts are not enforced"),
            Map.entry("dependentRequired", "conditional requirements are not enforced"),
            Map.entry("dependentSchemas", "conditional schemas are not enforced"),
            Map.entry("dependencies", "conditional requirements are not enforced"),
            Map.entry("not", "negated schemas are not enforced"),
            Map.entry("if", "conditional schemas are not enforced"),
            Map.entry("then", "conditional schemas are not enforced"),
            Map.entry("else", "conditional schemas are not enforced"),
            Map.entry("$dynamicRef", "only $ref to #, #/$defs/NAME or #/definitions/NAME is supported"),
            Map.entry("$recursiveRef", "only $ref to #, #/$defs/NAME or #/definitions/NAME is supported"),
            Map.entry("$anchor", "only $ref to #, #/$defs/NAME or #/definitions/NAME is supported"),
            Map.entry("$dynamicAnchor", "only $ref to #, #/$defs/NAME or #/definitions/NAME is supported"),
            Map.entry("$recursiveAnchor", "only $ref to #, #/$defs/NAME or #/definitions/NAME is supported"),
            Map.entry("contentEncoding", "encoded string contents are not enforced"),
            Map.entry("contentMediaType", "string media types are not enforced"),
            Map.entry("contentSchema", "string media types are not enforced"));

    private SchemaKeywords() {
    }

    /**
     * Accepts a keyword that is enforced or ignorable.
     *
     * @throws UnsupportedSchemaException for any other
     */
    static void check(String pointer, String keyword) {
        // x-*: vendor extensions (OpenAPI's), annotations by definition
        if (ENFORCED.contains(keyword) || IGNORED.contains(keyword) || keyword.startsWith("x-")) {
            return;
        }
        String why = REFUSED.get(keyword);
        throw new UnsupportedSchemaException(pointer, keyword,
                why != null ? why : "it is not a keyword guided decoding knows, and it might constrain the output");
    }
}
