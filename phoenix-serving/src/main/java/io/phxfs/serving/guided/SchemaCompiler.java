package io.phxfs.serving.guided;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON Schema into {@link SchemaNode}s: each schema object once per JSON pointer (so
 * that {@code $ref}s share the node they point to and recursive schemas become cycles through
 * object and array shapes), then flattens every node's alternatives.
 */
final class SchemaCompiler {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> COMBINATORS = List.of("$ref", "anyOf", "oneOf", "allOf");
    private static final List<String> TYPE_NAMES = List.of("string", "number", "integer", "boolean", "null", "object",
            "array");
    /** Keywords that constrain a value (as opposed to annotations and the combinators). */
    private static final List<String> CONSTRAINTS = List.of("type", "properties", "required", "additionalProperties",
            "enum", "const", "items", "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "format",
            "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum");
    private static final List<String> BOUNDS = List.of("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum");

    private final JsonNode root;
    private final Map<String, SchemaNode> byPointer = new HashMap<>();
    private final List<SchemaNode> compiled = new ArrayList<>();

    private SchemaCompiler(JsonNode root) {
        this.root = root;
    }

    /**
     * Compiles {@code schema}.
     *
     * @throws UnsupportedSchemaException for anything that cannot be enforced
     */
    static SchemaNode compile(JsonNode schema) {
        SchemaCompiler compiler = new SchemaCompiler(schema);
        SchemaNode node = compiler.node(schema, "");
        // a list that grows while resolving would be a bug: every node exists by now
        for (SchemaNode n : List.copyOf(compiler.compiled)) {
            n.resolve();
        }
        return node;
    }

    private SchemaNode node(JsonNode schema, String pointer) {
        SchemaNode existing = byPointer.get(pointer);
        if (existing != null) {
            return existing;
        }
        SchemaNode node = new SchemaNode(pointer);
        byPointer.put(pointer, node); // before the children: a $ref back here finds it
        compiled.add(node);
        fill(node, schema, pointer);
        return node;
    }

    private void fill(SchemaNode node, JsonNode schema, String p) {
        if (schema.isBoolean()) {
            if (schema.booleanValue()) {
                node.unite(AnyValue.NODE);
            }
            return;
        }
        if (!schema.isObject()) {
            throw new UnsupportedSchemaException(p, "", "a schema must be a JSON object or a boolean, not " + schema);
        }
        schema.fieldNames().forEachRemaining(k -> SchemaKeywords.check(p, k));
        JsonNode nullableNode = schema.get("nullable");
        if (nullableNode != null && !nullableNode.isBoolean()) {
            throw new UnsupportedSchemaException(p, "nullable", "it must be true or false");
        }
        boolean nullable = nullableNode != null && nullableNode.booleanValue();
        if (schema.has("format")) {
            format(schema, p); // an unknown format is refused whatever the type: int32's range is a constraint too
        }
        if (nullable) {
            node.addShape(LiteralSet.NULL);
        }
        List<String> combinators = COMBINATORS.stream().filter(schema::has).toList();
        if (!combinators.isEmpty()) {
            combinator(node, schema, p, combinators);
        } else if (schema.has("enum") || schema.has("const")) {
            literals(node, schema, p);
        } else {
            List<String> types = types(schema, p);
            for (String bound : BOUNDS) {
                if (schema.has(bound) && (!types.contains("integer") || types.contains("number"))) {
                    throw new UnsupportedSchemaException(p, bound, "numeric bounds are enforced on integers only (type integer)");
                }
            }
            for (String type : types) {
                ValueShape shape = shape(type, schema, p);
                if (shape != null) {
                    node.addShape(shape);
                }
            }
            if (!schema.has("type") && types(schema, p).isEmpty()) {
                node.unite(AnyValue.NODE);
            }
        }
    }

    private void combinator(SchemaNode node, JsonNode schema, String p, List<String> combinators) {
        String c = combinators.get(0);
        if (combinators.size() > 1) {
            throw new UnsupportedSchemaException(p, combinators.get(1), "it is combined with " + c + " in one schema");
        }
        for (String k : CONSTRAINTS) {
            if (schema.has(k)) {
                throw new UnsupportedSchemaException(p, k,
                        "it stands beside " + c + ", and a value would have to match both; move it into the alternatives");
            }
        }
        JsonNode v = schema.get(c);
        switch (c) {
            case "$ref" -> node.unite(reference(v, p));
            case "anyOf", "oneOf" -> {
                // oneOf as anyOf, as xgrammar does: exactly-one is not enforced when branches overlap
                if (!v.isArray() || v.isEmpty()) {
                    throw new UnsupportedSchemaException(p, c, "it must be a non-empty list of schemas");
                }
                for (int i = 0; i < v.size(); i++) {
                    node.unite(node(v.get(i), p + "/" + c + "/" + i));
                }
            }
            default -> { // allOf
                if (!v.isArray() || v.size() != 1) {
                    throw new UnsupportedSchemaException(p, c, "only an allOf of exactly one schema is supported");
                }
                node.unite(node(v.get(0), p + "/allOf/0"));
            }
        }
    }

    private SchemaNode reference(JsonNode ref, String p) {
        String target = ref.isTextual() ? ref.textValue() : "";
        String pointer = target.startsWith("#") ? percentDecode(target.substring(1)) : null;
        boolean supported = pointer != null && (pointer.isEmpty() || definition(pointer, "/$defs/")
                || definition(pointer, "/definitions/"));
        if (!supported) {
            throw new UnsupportedSchemaException(p, "$ref",
                    "only #, #/$defs/NAME and #/definitions/NAME are supported, not " + ref);
        }
        JsonNode to = pointer.isEmpty() ? root : root.at(pointer);
        if (to.isMissingNode()) {
            throw new UnsupportedSchemaException(p, "$ref", "its target " + target + " does not exist");
        }
        return node(to, pointer);
    }

    private static boolean definition(String pointer, String container) {
        return pointer.startsWith(container) && pointer.length() > container.length()
                && pointer.indexOf('/', container.length()) < 0;
    }

    private static String percentDecode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            int hi = i + 2 < s.length() ? Character.digit(s.charAt(i + 1), 16) : -1;
            int lo = i + 2 < s.length() ? Character.digit(s.charAt(i + 2), 16) : -1;
            if (ch == '%' && hi >= 0 && lo >= 0) {
                bytes.write(hi * 16 + lo);
                i += 2;
            } else {
                bytes.writeBytes(String.valueOf(ch).getBytes(StandardCharsets.UTF_8));
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    private void literals(SchemaNode node, JsonNode schema, String p) {
        for (String k : CONSTRAINTS) {
            if (schema.has(k) && !k.equals("type") && !k.equals("enum") && !k.equals("const")) {
                throw new UnsupportedSchemaException(p, k, "it stands beside enum or const; only type may");
            }
        }
        List<JsonNode> values = new ArrayList<>();
        JsonNode en = schema.get("enum");
        if (en != null) {
            if (!en.isArray()) {
                throw new UnsupportedSchemaException(p, "enum", "it must be a list of values");
            }
            en.forEach(values::add);
        }
        JsonNode cn = schema.get("const");
        if (cn != null) {
            values = en == null ? List.of(cn) : values.stream().filter(cn::equals).toList();
        }
        Set<String> types = schema.has("type") ? Set.copyOf(types(schema, p)) : null;
        List<String> texts = new ArrayList<>();
        for (JsonNode v : values) {
            if (types == null || types.stream().anyMatch(t -> hasType(v, t))) {
                try {
                    texts.add(JSON.writeValueAsString(v));
                } catch (JsonProcessingException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        node.addShape(LiteralSet.of(texts));
    }

    private static boolean hasType(JsonNode v, String type) {
        return switch (type) {
            case "string" -> v.isTextual();
            case "number" -> v.isNumber();
            case "integer" -> v.isIntegralNumber();
            case "boolean" -> v.isBoolean();
            case "null" -> v.isNull();
            case "object" -> v.isObject();
            default -> v.isArray();
        };
    }

    /** The types the schema names, or infers from its keywords (properties: an object, ...); empty: any. */
    private static List<String> types(JsonNode schema, String p) {
        JsonNode t = schema.get("type");
        Set<String> types = new LinkedHashSet<>();
        if (t == null) {
            if (schema.has("properties") || schema.has("required") || schema.has("additionalProperties")) {
                types.add("object");
            }
            if (schema.has("items") || schema.has("prefixItems") || schema.has("minItems") || schema.has("maxItems")) {
                types.add("array");
            }
            if (schema.has("minLength") || schema.has("maxLength") || schema.has("format") || schema.has("pattern")) {
                types.add("string");
            }
            return List.copyOf(types);
        }
        List<JsonNode> names = new ArrayList<>();
        if (t.isArray()) {
            t.forEach(names::add);
        } else {
            names.add(t);
        }
        for (JsonNode n : names) {
            if (!n.isTextual() || !TYPE_NAMES.contains(n.textValue())) {
                throw new UnsupportedSchemaException(p, "type", "unknown type " + n);
            }
            types.add(n.textValue());
        }
        if (types.isEmpty()) {
            throw new UnsupportedSchemaException(p, "type", "an empty list of types allows no value");
        }
        return List.copyOf(types);
    }

    private ValueShape shape(String type, JsonNode schema, String p) {
        return switch (type) {
            case "string" -> {
                if (schema.has("format")) {
                    if (schema.has("pattern")) {
                        throw new UnsupportedSchemaException(p, "pattern", "it stands beside format (use one of them)");
                    }
                    String regular = RegexFormats.of(schema.get("format").textValue());
                    if (regular == null) {
                        yield formatted(schema, p);
                    }
                    yield regular(RegexParser.parse(regular), schema, p, "format", "format " + schema.get("format").textValue());
                }
                int min = count(schema, "minLength", p, 0);
                int max = count(schema, "maxLength", p, StringShape.UNBOUNDED);
                if (schema.has("pattern")) {
                    yield patterned(schema.get("pattern"), min, max, p);
                }
                yield min == 0 && max == StringShape.UNBOUNDED ? StringShape.ANY : new StringShape(min, max, null);
            }
            case "number" -> NumberShape.NUMBER;
            case "integer" -> BOUNDS.stream().anyMatch(schema::has) ? IntegerBounds.of(schema, p) : NumberShape.INTEGER;
            case "boolean" -> LiteralSet.BOOLEAN;
            case "null" -> LiteralSet.NULL;
            case "object" -> object(schema, p);
            default -> array(schema, p);
        };
    }

    /** A string whose content matches {@code pattern}, within the length bounds. */
    private static PatternShape patterned(JsonNode pattern, int min, int max, String p) {
        if (!pattern.isTextual()) {
            throw new UnsupportedSchemaException(p, "pattern", "it must be a string, not " + pattern);
        }
        org.apache.lucene.util.automaton.Automaton a;
        try {
            a = RegexParser.parse(pattern.textValue());
        } catch (IllegalArgumentException e) {
            throw new UnsupportedSchemaException(p, "pattern", e.getMessage());
        }
        return regular(a, min, max, p, "pattern", "/" + pattern.textValue() + "/");
    }

    /** A string of a regular format, within the schema's length bounds. */
    private static PatternShape regular(org.apache.lucene.util.automaton.Automaton a, JsonNode schema, String p, String keyword,
                                        String what) {
        return regular(a, count(schema, "minLength", p, 0), count(schema, "maxLength", p, StringShape.UNBOUNDED), p, keyword,
                what);
    }

    private static PatternShape regular(org.apache.lucene.util.automaton.Automaton a, int min, int max, String p, String keyword,
                                        String what) {
        ByteLanguage content;
        try {
            content = StringContent.language(a, min, "the " + keyword);
        } catch (IllegalArgumentException e) {
            throw new UnsupportedSchemaException(p, keyword, e.getMessage());
        }
        if (max != StringShape.UNBOUNDED && content.minChars(content.start()) > max) {
            throw new UnsupportedSchemaException(p, keyword, "its shortest string has " + content.minChars(content.start())
                    + " characters, more than maxLength " + max);
        }
        return new PatternShape(content, max, what);
    }

    private static StringFormat format(JsonNode schema, String p) {
        JsonNode f = schema.get("format");
        StringFormat format = f.isTextual() ? StringFormat.of(f.textValue()) : null;
        if (format == null && !(f.isTextual() && RegexFormats.of(f.textValue()) != null)) {
            throw new UnsupportedSchemaException(p, "format", "only the formats date, time, date-time, uuid, "
                    + RegexFormats.names() + " are enforced, not " + f);
        }
        return format;
    }

    private static FormatShape formatted(JsonNode schema, String p) {
        StringFormat format = format(schema, p);
        for (String k : List.of("minLength", "maxLength")) {
            if (schema.has(k)) {
                throw new UnsupportedSchemaException(p, k, "it stands beside format, whose strings have their own lengths");
            }
        }
        return new FormatShape(format);
    }

    private static int count(JsonNode schema, String keyword, String p, int absent) {
        JsonNode v = schema.get(keyword);
        if (v == null) {
            return absent;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 0) {
            // 2.0 is a valid count in JSON Schema, but no schema writer emits it
            throw new UnsupportedSchemaException(p, keyword, "it must be a non-negative integer, not " + v);
        }
        return v.intValue();
    }

    private ObjectShape object(JsonNode schema, String p) {
        JsonNode props = schema.get("properties");
        JsonNode additional = schema.get("additionalProperties");
        Set<String> required = new LinkedHashSet<>();
        JsonNode req = schema.get("required");
        if (req != null) {
            if (!req.isArray()) {
                throw new UnsupportedSchemaException(p, "required", "it must be a list of property names");
            }
            for (JsonNode r : req) {
                if (!r.isTextual()) {
                    throw new UnsupportedSchemaException(p, "required", "it must be a list of property names");
                }
                required.add(r.textValue());
            }
        }
        if (props != null && !props.isObject()) {
            throw new UnsupportedSchemaException(p, "properties", "it must be an object of schemas");
        }
        if (props == null && additional == null && required.isEmpty()) {
            return AnyValue.OBJECT;
        }
        List<String> names = new ArrayList<>();
        List<byte[]> keys = new ArrayList<>();
        List<SchemaNode> values = new ArrayList<>();
        List<Boolean> isRequired = new ArrayList<>();
        if (props != null) {
            for (Map.Entry<String, JsonNode> e : props.properties()) {
                String name = e.getKey();
                names.add(name);
                try {
                    keys.add(JSON.writeValueAsBytes(name));
                } catch (JsonProcessingException ex) {
                    throw new IllegalStateException(ex);
                }
                values.add(node(e.getValue(), p + "/properties/" + escape(name)));
                isRequired.add(required.contains(name));
            }
        }
        for (String r : required) {
            if (!names.contains(r)) {
                throw new UnsupportedSchemaException(p, "required",
                        "'" + r + "' is required but not listed in properties, so its place and schema are unknown");
            }
        }
        SchemaNode extra;
        if (additional == null) {
            // strict, as xgrammar: declared properties and nothing else; a bare object takes any
            extra = props == null ? AnyValue.NODE : null;
        } else if (additional.isBoolean()) {
            extra = additional.booleanValue() ? AnyValue.NODE : null;
        } else if (additional.isObject()) {
            extra = node(additional, p + "/additionalProperties");
        } else {
            throw new UnsupportedSchemaException(p, "additionalProperties", "it must be a boolean or a schema");
        }
        return new ObjectShape(p, keys, values, isRequired, extra, names);
    }

    private ArrayShape array(JsonNode schema, String p) {
        List<SchemaNode> prefix = new ArrayList<>();
        JsonNode pi = schema.get("prefixItems");
        if (pi != null) {
            if (!pi.isArray()) {
                throw new UnsupportedSchemaException(p, "prefixItems", "it must be a list of schemas");
            }
            for (int i = 0; i < pi.size(); i++) {
                prefix.add(node(pi.get(i), p + "/prefixItems/" + i));
            }
        }
        JsonNode items = schema.get("items");
        SchemaNode rest;
        if (items == null) {
            rest = AnyValue.NODE;
        } else if (items.isArray()) {
            throw new UnsupportedSchemaException(p, "items", "a list of item schemas (draft 4 tuples) is not supported; use prefixItems");
        } else if (items.isBoolean() && !items.booleanValue()) {
            rest = null;
        } else {
            rest = node(items, p + "/items");
        }
        int min = count(schema, "minItems", p, 0);
        int max = count(schema, "maxItems", p, ArrayShape.UNBOUNDED);
        return new ArrayShape(p, prefix.toArray(SchemaNode[]::new), rest, min, max);
    }

    /** A property name as a JSON pointer segment. */
    private static String escape(String name) {
        return name.replace("~", "~0").replace("/", "~1");
    }
}
