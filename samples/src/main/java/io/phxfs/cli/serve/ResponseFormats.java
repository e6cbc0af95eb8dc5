package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.OutputGrammar;
import io.phxfs.serving.guided.TextGrammar;
import io.phxfs.serving.guided.UnsupportedSchemaException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * OpenAI's {@code response_format}, as vLLM serves it: {@code text} (free text),
 * {@code json_object} (the output is guided to a JSON object) and {@code json_schema} (guided to
 * {@code json_schema.schema}; OpenAI's {@code strict} changes nothing here, the output always
 * matches), and vLLM's {@code structured_outputs} ({@code json}, {@code regex}, {@code choice},
 * {@code json_object}) and {@code guided_json} / {@code guided_regex} / {@code guided_choice}.
 * A schema or expression the guide cannot enforce is a 400 naming the keyword or construct and
 * where it is.
 */
final class ResponseFormats {
    private ResponseFormats() {
    }

    /**
     * The guide {@code response_format} asks for.
     *
     * @return the output's grammar, or null for free text (absent, null or {@code text})
     * @throws ApiException 400 naming the field
     */
    static OutputGrammar read(ObjectNode body) {
        OutputGrammar vllm = vllmFields(body);
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
     * vLLM's own fields for the same: {@code structured_outputs} (vLLM 0.10 on) with one of
     * {@code json} (a schema), {@code regex}, {@code choice} or {@code json_object}, and the older
     * {@code guided_json} (a schema, or a JSON string of one), {@code guided_regex} and
     * {@code guided_choice}. A grammar, a structural tag and a whitespace pattern are refused by
     * name rather than ignored; so are two kinds at once.
     */
    /**
     * vLLM's flags that change nothing here: {@code disable_fallback} (there is one backend) and
     * {@code disable_additional_properties} (an absent {@code additionalProperties} already
     * allows none).
     */
    private static final List<String> NO_OPS = List.of("disable_fallback", "disable_additional_properties");

    private static OutputGrammar vllmFields(ObjectNode body) {
        for (String field : new String[] {"guided_grammar", "guided_whitespace_pattern"}) {
            if (body.hasNonNull(field)) {
                throw ApiException.invalid(field, field + ": not supported; this server guides outputs by JSON Schema,"
                        + " regular expression or choice (structured_outputs.json / regex / choice)");
            }
        }
        Map<String, JsonNode> kinds = new LinkedHashMap<>();
        for (String kind : List.of("json", "regex", "choice")) {
            JsonNode old = body.get("guided_" + kind);
            if (old != null && !old.isNull()) {
                kinds.put("guided_" + kind, old);
            }
        }
        JsonNode so = body.get("structured_outputs");
        if (so != null && !so.isNull()) {
            if (!so.isObject()) {
                throw ApiException.invalid("structured_outputs", "structured_outputs must be an object, not "
                        + OpenAiRequests.kind(so));
            }
            for (var e : so.properties()) {
                JsonNode v = e.getValue();
                String k = e.getKey();
                if (v.isNull() || (v.isBoolean() && !v.booleanValue()) || NO_OPS.contains(k) && v.isBoolean()) {
                    continue;
                }
                if (!List.of("json", "regex", "choice", "json_object").contains(k)) {
                    throw ApiException.invalid("structured_outputs." + k, "structured_outputs." + k
                            + ": not supported; this server guides outputs by JSON Schema, regular expression or choice"
                            + " (structured_outputs.json, .regex, .choice, .json_object)");
                }
                kinds.put("structured_outputs." + k, v);
            }
        }
        if (kinds.isEmpty()) {
            return null;
        }
        if (kinds.size() > 1) {
            throw ApiException.invalid(kinds.keySet().iterator().next(), String.join(" and ", kinds.keySet())
                    + ": send one of them");
        }
        var only = kinds.entrySet().iterator().next();
        String where = only.getKey();
        JsonNode v = only.getValue();
        String kind = where.substring(where.startsWith("guided_") ? "guided_".length() : "structured_outputs.".length());
        return switch (kind) {
            case "regex" -> regex(v, where);
            case "choice" -> choice(v, where);
            case "json_object" -> {
                if (!v.isBoolean()) {
                    throw ApiException.invalid(where, where + " must be true or false, not " + OpenAiRequests.kind(v));
                }
                yield JsonSchemaMatcher.anyObject();
            }
            default -> json(v, where);
        };
    }

    private static OutputGrammar regex(JsonNode v, String where) {
        if (!v.isTextual()) {
            throw ApiException.invalid(where, where + " must be a string (a regular expression), not " + OpenAiRequests.kind(v));
        }
        try {
            return TextGrammar.regex(v.textValue());
        } catch (IllegalArgumentException e) {
            throw ApiException.invalid(where, where + ": " + e.getMessage());
        }
    }

    private static OutputGrammar choice(JsonNode v, String where) {
        if (!v.isArray() || v.isEmpty()) {
            throw ApiException.invalid(where, where + " must be a non-empty list of strings, not "
                    + (v.isArray() ? "an empty list" : OpenAiRequests.kind(v)));
        }
        List<String> choices = new ArrayList<>();
        for (int i = 0; i < v.size(); i++) {
            if (!v.get(i).isTextual()) {
                throw ApiException.invalid(where, where + "[" + i + "] must be a string, not " + OpenAiRequests.kind(v.get(i)));
            }
            choices.add(v.get(i).textValue());
        }
        try {
            return TextGrammar.choice(choices);
        } catch (IllegalArgumentException e) {
            throw ApiException.invalid(where, where + ": " + e.getMessage());
        }
    }

    private static OutputGrammar json(JsonNode v, String where) {
        JsonNode json = v;
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
