package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.UnsupportedSchemaException;
import io.phxfs.serving.tools.ToolCall;
import io.phxfs.serving.tools.ToolCallIds;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code tool_choice: "required"} and a named function, as vLLM serves them: the output is
 * guided by a JSON Schema, so the model cannot but call. Named, the output is the function's
 * arguments (its {@code parameters} schema) and becomes one call of it. Required, the output is
 * a JSON list of <code>{"name": ..., "parameters": {...}}</code> (each item one of the tools,
 * at least one, one at most with {@code parallel_tool_calls: false}) and becomes those calls.
 * The tools' {@code $defs} are gathered at the top of the list's schema, where their
 * {@code #/$defs/...} references then point.
 */
final class ForcedTools {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ForcedTools() {
    }

    /**
     * The schema the output is guided by, or null when the tools are not forced.
     *
     * @throws ApiException 400 naming the tool's parameters when guided decoding cannot enforce them
     */
    static JsonSchemaMatcher matcher(ToolRequests.Tools t) {
        return switch (t.choice()) {
            case NAMED -> {
                int i = index(t.tools(), t.named());
                JsonNode parameters = JSON.valueToTree(function(t.tools().get(i)).get("parameters"));
                yield compile(parameters == null || parameters.isNull() ? null : parameters,
                        "tools[" + i + "].function.parameters");
            }
            case REQUIRED -> compile(listSchema(t), "tools");
            default -> null;
        };
    }

    private static JsonSchemaMatcher compile(JsonNode schema, String where) {
        if (schema == null) {
            return JsonSchemaMatcher.anyObject();
        }
        try {
            return JsonSchemaMatcher.compile(schema);
        } catch (UnsupportedSchemaException e) {
            throw ApiException.invalid(where, where + ": " + e.getMessage());
        }
    }

    /** The required list's schema: items each one of the tools by name, with its parameters. */
    static ObjectNode listSchema(ToolRequests.Tools t) {
        ObjectNode list = JSON.createObjectNode();
        list.put("type", "array");
        list.put("minItems", 1);
        if (!t.parallel()) {
            list.put("maxItems", 1);
        }
        ArrayNode anyOf = list.putObject("items").putArray("anyOf");
        ObjectNode defs = JSON.createObjectNode();
        for (Map<String, Object> tool : t.tools()) {
            Map<?, ?> f = function(tool);
            ObjectNode item = anyOf.addObject();
            item.put("type", "object");
            ObjectNode props = item.putObject("properties");
            props.putObject("name").put("type", "string").putArray("enum").add((String) f.get("name"));
            JsonNode parameters = f.get("parameters") == null ? null : JSON.valueToTree(f.get("parameters"));
            if (parameters instanceof ObjectNode p) {
                p = p.deepCopy();
                for (String key : new String[] {"$defs", "definitions"}) {
                    if (p.get(key) instanceof ObjectNode d) {
                        d.properties().forEach(e -> defs.set(e.getKey(), e.getValue()));
                        p.remove(key);
                    }
                }
                props.set("parameters", p);
            } else {
                props.putObject("parameters").put("type", "object").put("additionalProperties", true);
            }
            item.putArray("required").add("name").add("parameters");
        }
        if (!defs.isEmpty()) {
            list.set("$defs", defs);
        }
        return list;
    }

    /**
     * The calls of a required choice's output: the list's items, each item's parameters as its
     * arguments; none when the output is not such a list (cut short by max_tokens, say).
     */
    static List<ToolCall> requiredCalls(String output) {
        List<ToolCall> calls = new ArrayList<>();
        JsonNode list;
        try {
            list = JSON.readTree(output);
        } catch (java.io.IOException e) {
            return calls;
        }
        if (list == null || !list.isArray()) {
            return calls;
        }
        for (JsonNode item : list) {
            if (item.path("name").isTextual()) {
                calls.add(new ToolCall(ToolCallIds.OPENAI.get(), item.get("name").textValue(),
                        item.has("parameters") ? item.get("parameters").toString() : "{}"));
            }
        }
        return calls;
    }

    private static Map<?, ?> function(Map<String, Object> tool) {
        return (Map<?, ?>) tool.get("function");
    }

    private static int index(List<Map<String, Object>> tools, String name) {
        for (int i = 0; i < tools.size(); i++) {
            if (name.equals(function(tools.get(i)).get("name"))) {
                return i;
            }
        }
        throw new IllegalStateException("tool_choice names " + name + ", which ToolRequests checked is among the tools");
    }
}
