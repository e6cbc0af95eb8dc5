package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tool fields of a chat request, read as vLLM reads them: {@code tools} become the chat
 * template's {@code tools} variable in the shape vLLM gives it (each tool's
 * {@code model_dump()}: {@code type}, then {@code function} with {@code name},
 * {@code description} and {@code parameters}, null when not given, then any other field the
 * client sent), {@code tool_choice} and {@code parallel_tool_calls}; and the assistant
 * messages' {@code tool_calls}, whose {@code arguments} (a JSON string in OpenAI's API) are
 * parsed into objects, as vLLM does before rendering, since templates write them with
 * {@code tojson} or iterate over them. Faults are 400s naming the field.
 */
final class ToolRequests {
    private ToolRequests() {
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    /** What the request asks of tool calls. */
    enum Choice {
        /** Tools (if any) are rendered; the output is not parsed for calls. */
        NONE,
        /** The output is parsed for calls with the server's parser. */
        AUTO,
        /** At least one call: the output is guided to a JSON list of calls ({@link ForcedTools}). */
        REQUIRED,
        /** A call of one function: the output is guided to its arguments ({@link ForcedTools}). */
        NAMED
    }

    /**
     * The tool fields.
     *
     * @param tools the template's {@code tools}, or null when the request has none (None in the template)
     * @param choice what tool_choice asks, "auto" when the request has tools and no tool_choice
     * @param parallel {@code parallel_tool_calls}: false keeps only the first call
     * @param named the function {@code tool_choice} names ({@link Choice#NAMED}), else null
     */
    record Tools(List<Map<String, Object>> tools, Choice choice, boolean parallel, String named) {
        /** Whether the output is to be parsed for calls: tool_choice "auto" with at least one tool. */
        boolean parse() {
            return choice == Choice.AUTO && tools != null && !tools.isEmpty();
        }
    }

    /**
     * Reads {@code tools}, {@code tool_choice} and {@code parallel_tool_calls}.
     *
     * @throws ApiException 400 naming the field
     */
    static Tools read(ObjectNode body) {
        List<Map<String, Object>> tools = tools(body.get("tools"));
        JsonNode toolChoice = body.get("tool_choice");
        Choice choice = choice(toolChoice, tools);
        JsonNode p = body.get("parallel_tool_calls");
        boolean parallel = true;
        if (p != null && !p.isNull()) {
            if (!p.isBoolean()) {
                throw ApiException.invalid("parallel_tool_calls", "parallel_tool_calls must be a boolean, not "
                        + OpenAiRequests.kind(p));
            }
            parallel = p.booleanValue();
        }
        return new Tools(tools, choice, parallel, choice == Choice.NAMED ? toolChoice.path("function").path("name").textValue()
                : null);
    }

    private static List<Map<String, Object>> tools(JsonNode t) {
        if (t == null || t.isNull()) {
            return null;
        }
        if (!t.isArray()) {
            throw ApiException.invalid("tools", "tools must be a list of {\"type\": \"function\", \"function\": {...}},"
                    + " not " + OpenAiRequests.kind(t));
        }
        List<Map<String, Object>> out = new ArrayList<>(t.size());
        for (int i = 0; i < t.size(); i++) {
            out.add(tool(t.get(i), "tools[" + i + "]"));
        }
        return out;
    }

    private static Map<String, Object> tool(JsonNode t, String where) {
        if (!t.isObject()) {
            throw ApiException.invalid(where, where + " must be an object {\"type\": \"function\", \"function\": {...}},"
                    + " not " + OpenAiRequests.kind(t));
        }
        JsonNode type = t.get("type");
        // absent, it is "function", as vLLM's request model defaults it
        if (type != null && !type.isNull() && (!type.isTextual() || !type.textValue().equals("function"))) {
            throw ApiException.invalid(where + ".type", where + ".type: only \"function\" is supported, not "
                    + OpenAiRequests.kind(type));
        }
        JsonNode f = t.get("function");
        if (f == null || f.isNull()) {
            throw ApiException.invalid(where + ".function", where + ".function: required ({\"name\": ..., \"parameters\":"
                    + " {...}})");
        }
        if (!f.isObject()) {
            throw ApiException.invalid(where + ".function", where + ".function must be an object, not "
                    + OpenAiRequests.kind(f));
        }
        JsonNode name = f.get("name");
        if (name == null || name.isNull()) {
            throw ApiException.invalid(where + ".function.name", where + ".function.name: required");
        }
        if (!name.isTextual() || name.textValue().isEmpty()) {
            throw ApiException.invalid(where + ".function.name", where + ".function.name must be a non-empty string, not "
                    + OpenAiRequests.kind(name));
        }
        JsonNode description = f.get("description");
        if (description != null && !description.isNull() && !description.isTextual()) {
            throw ApiException.invalid(where + ".function.description", where + ".function.description must be a string,"
                    + " not " + OpenAiRequests.kind(description));
        }
        JsonNode parameters = f.get("parameters");
        if (parameters != null && !parameters.isNull() && !parameters.isObject()) {
            throw ApiException.invalid(where + ".function.parameters", where + ".function.parameters must be a JSON"
                    + " Schema object, not " + OpenAiRequests.kind(parameters));
        }
        // vLLM's model_dump(): the declared fields first, unset ones as None, then the extra ones
        Map<String, Object> function = new LinkedHashMap<>();
        function.put("name", name.textValue());
        function.put("description", plain(description));
        function.put("parameters", plain(parameters));
        for (var e : f.properties()) {
            function.putIfAbsent(e.getKey(), plain(e.getValue()));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", "function");
        out.put("function", function);
        for (var e : t.properties()) {
            out.putIfAbsent(e.getKey(), plain(e.getValue()));
        }
        return out;
    }

    private static Choice choice(JsonNode c, List<Map<String, Object>> tools) {
        if (c == null || c.isNull()) {
            // OpenAI's default: "auto" when there are tools, else "none"
            return tools != null && !tools.isEmpty() ? Choice.AUTO : Choice.NONE;
        }
        if (c.isTextual()) {
            switch (c.textValue()) {
                case "none" -> {
                    return Choice.NONE;
                }
                case "auto" -> {
                    requireTools(tools);
                    return Choice.AUTO;
                }
                case "required" -> {
                    requireTools(tools);
                    if (tools.isEmpty()) {
                        throw ApiException.invalid("tool_choice", "tool_choice: \"required\" needs at least one tool");
                    }
                    return Choice.REQUIRED;
                }
                default -> throw ApiException.invalid("tool_choice", "tool_choice must be \"none\", \"auto\","
                        + " \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}, not "
                        + OpenAiRequests.kind(c));
            }
        }
        if (!c.isObject()) {
            throw ApiException.invalid("tool_choice", "tool_choice must be a string or an object, not "
                    + OpenAiRequests.kind(c));
        }
        requireTools(tools);
        JsonNode name = c.path("function").path("name");
        if (!"function".equals(c.path("type").asText(null)) || !name.isTextual()) {
            throw ApiException.invalid("tool_choice", "tool_choice: an object must be {\"type\": \"function\","
                    + " \"function\": {\"name\": ...}}");
        }
        boolean known = tools.stream().anyMatch(t -> name.textValue().equals(((Map<?, ?>) t.get("function")).get("name")));
        if (!known) {
            throw ApiException.invalid("tool_choice.function.name", "tool_choice.function.name: \"" + name.textValue()
                    + "\" is not among the tools");
        }
        return Choice.NAMED;
    }

    private static void requireTools(List<Map<String, Object>> tools) {
        if (tools == null) {
            throw ApiException.invalid("tool_choice", "tool_choice: when using tool_choice, tools must be set");
        }
    }

    /**
     * An assistant message's {@code tool_calls} as templates take them: checked, with each
     * {@code function.arguments} string parsed into its JSON value (an empty or missing one
     * becomes <code>{}</code>, as in vLLM).
     *
     * @param where the message's place, {@code messages[2]}
     * @throws ApiException 400 naming the message and field
     */
    static List<Object> assistantCalls(JsonNode calls, String where) {
        String w = where + ".tool_calls";
        if (!calls.isArray()) {
            throw ApiException.invalid("messages", w + " must be a list, not " + OpenAiRequests.kind(calls));
        }
        List<Object> out = new ArrayList<>(calls.size());
        for (int i = 0; i < calls.size(); i++) {
            JsonNode c = calls.get(i);
            String cw = w + "[" + i + "]";
            if (!c.isObject()) {
                throw ApiException.invalid("messages", cw + " must be an object {id, type, function}, not "
                        + OpenAiRequests.kind(c));
            }
            JsonNode f = c.get("function");
            if (f == null || !f.isObject()) {
                throw ApiException.invalid("messages", cw + ".function: required, an object {name, arguments}");
            }
            JsonNode name = f.get("name");
            if (name == null || !name.isTextual()) {
                throw ApiException.invalid("messages", cw + ".function.name must be a string");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> call = (Map<String, Object>) plain(c);
            @SuppressWarnings("unchecked")
            Map<String, Object> function = (Map<String, Object>) call.get("function");
            JsonNode args = f.get("arguments");
            if (args == null || args.isNull() || args.isTextual() && args.textValue().isEmpty()) {
                function.put("arguments", new LinkedHashMap<>());
            } else if (args.isTextual()) {
                try {
                    function.put("arguments", JSON.readValue(args.textValue(), Object.class));
                } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                    throw ApiException.invalid("messages", cw + ".function.arguments is not valid JSON: "
                            + String.valueOf(e.getOriginalMessage()).lines().findFirst().orElse(""));
                }
            } else if (!args.isObject()) {
                throw ApiException.invalid("messages", cw + ".function.arguments must be a JSON string, not "
                        + OpenAiRequests.kind(args));
            }
            out.add(call);
        }
        return out;
    }

    private static Object plain(JsonNode n) {
        return n == null ? null : JSON.convertValue(n, Object.class);
    }
}
