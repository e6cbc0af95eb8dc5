package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.UnsupportedSchemaException;

/**
 * OpenAI's {@code response_format}, as vLLM serves it: {@code text} (free text),
 * {@code json_object} (the output is guided to a JSON object) and {@code json_schema} (guided to
 * {@code json_schema.schema}; OpenAI's {@code strict} changes nothing here, the output always
 * matches), and vLLM's {@code structured_outputs.json} and {@code guided_json}. A schema the
 * guide cannot enforce is a 400 naming the keyword and where it is.
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
        JsonSchemaMatcher vllm = vllmFields(body);
        JsonNode f = body.get("response_format");
        if (f == null || f.isNull()) {
            return vllm;
        }
        if (vllm != null && !"text".equals(f.path("type").asText())) {
            throw ApiException.invalid("response_format", "response_format and vLLM's guided_json / structured_outputs"
                    + " both decide the output; send one of them");
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

    /**
     * vLLM's own fields for the same: {@code structured_outputs: {"json": SCHEMA}} (vLLM 0.10 on)
     * and the older {@code guided_json} (a schema, or a JSON string of one); the other kinds
     * (choice, regex, grammar, structural tags) are refused by name rather than ignored.
     */
    private static JsonSchemaMatcher vllmFields(ObjectNode body) {
        for (String field : new String[] {"guided_choice", "guided_regex", "guided_grammar", "guided_whitespace_pattern"}) {
            if (body.hasNonNull(field)) {
                throw ApiException.invalid(field, field + ": not supported; this server guides outputs by JSON Schema only"
                        + " (guided_json, structured_outputs.json, response_format json_schema; a choice is a schema"
                        + " {\"enum\": [...]})");
            }
        }
        JsonNode so = body.get("structured_outputs");
        JsonNode json = body.get("guided_json");
        String where = "guided_json";
        if (so != null && !so.isNull()) {
            if (!so.isObject()) {
                throw ApiException.invalid("structured_outputs", "structured_outputs must be an object, not "
                        + OpenAiRequests.kind(so));
            }
            for (var e : so.properties()) {
                if (!e.getKey().equals("json") && !e.getValue().isNull() && !(e.getValue().isBoolean() && !e.getValue().booleanValue())) {
                    throw ApiException.invalid("structured_outputs." + e.getKey(), "structured_outputs." + e.getKey()
                            + ": not supported; this server guides outputs by JSON Schema only (structured_outputs.json)");
                }
            }
            if (json != null && !json.isNull() && so.hasNonNull("json")) {
                throw ApiException.invalid("guided_json", "guided_json and structured_outputs.json: send one of them");
            }
            if (so.hasNonNull("json")) {
                json = so.get("json");
                where = "structured_outputs.json";
            }
        }
        if (json == null || json.isNull()) {
            return null;
        }
        if (json.isTextual()) {
            try {
                json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.textValue());
            } catch (java.io.IOException e) {
                throw ApiException.invalid(where, where + ": a string that is not JSON");
            }
        }
        if (!json.isObject() && !json.isBoolean()) {
            throw ApiException.invalid(where, where + " must be a JSON Schema object, not " + OpenAiRequests.kind(json));
        }
        try {
            return JsonSchemaMatcher.compile(json);
        } catch (UnsupportedSchemaException e) {
            throw ApiException.invalid(where, where + ": " + e.getMessage());
        }
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
