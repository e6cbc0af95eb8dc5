package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.UnsupportedSchemaException;

/**
 * OpenAI's {@code response_format}, as vLLM serves it: {@code text} (free text),
 * {@code json_object} (the output is guided to a JSON object) and {@code json_schema} (guided to
 * {@code json_schema.schema}; OpenAI's {@code strict} changes nothing here, the output always
 * matches). A schema the guide cannot enforce is a 400 naming the keyword and where it is.
 */
final class ResponseFormats {
    private ResponseFormats() {
    }

    /**
     * The guide {@code response_format} asks for.
     *
     * @return the schema's matcher, or null for free text (absent, null or {@code text})
     * @throws ApiException 400 naming the field
     */
    static JsonSchemaMatcher read(ObjectNode body) {
        JsonNode f = body.get("response_format");
        if (f == null || f.isNull()) {
            return null;
        }
        if (!f.isObject()) {
            throw ApiException.invalid("response_format", "response_format must be an object {\"type\": \"text\" |"
                    + " \"json_object\" | \"json_schema\"}, not " + OpenAiRequests.kind(f));
        }
        JsonNode type = f.get("type");
        String t = type != null && type.isTextual() ? type.textValue() : null;
        if (t == null) {
            throw ApiException.invalid("response_format.type", "response_format.type: required, one of \"text\","
                    + " \"json_object\", \"json_schema\"");
        }
        return switch (t) {
            case "text" -> null;
            case "json_object" -> JsonSchemaMatcher.anyObject();
            case "json_schema" -> schema(f.get("json_schema"));
            default -> throw ApiException.invalid("response_format.type", "response_format.type must be \"text\","
                    + " \"json_object\" or \"json_schema\", not \"" + t + "\"");
        };
    }

    private static JsonSchemaMatcher schema(JsonNode js) {
        if (js == null || !js.isObject()) {
            throw ApiException.invalid("response_format.json_schema", "response_format.json_schema: required, an object"
                    + " {\"name\": ..., \"schema\": {...}}" + (js == null ? "" : ", not " + OpenAiRequests.kind(js)));
        }
        JsonNode name = js.get("name");
        if (name != null && !name.isNull() && !name.isTextual()) {
            throw ApiException.invalid("response_format.json_schema.name", "response_format.json_schema.name must be a"
                    + " string, not " + OpenAiRequests.kind(name));
        }
        JsonNode schema = js.get("schema");
        if (schema == null || schema.isNull()) {
            // OpenAI's schema is optional: without one, any JSON object
            return JsonSchemaMatcher.anyObject();
        }
        if (!schema.isObject() && !schema.isBoolean()) {
            throw ApiException.invalid("response_format.json_schema.schema", "response_format.json_schema.schema must be"
                    + " a JSON Schema object, not " + OpenAiRequests.kind(schema));
        }
        try {
            return JsonSchemaMatcher.compile(schema);
        } catch (UnsupportedSchemaException e) {
            throw ApiException.invalid("response_format.json_schema.schema", "response_format.json_schema.schema: "
                    + e.getMessage());
        }
    }
}
