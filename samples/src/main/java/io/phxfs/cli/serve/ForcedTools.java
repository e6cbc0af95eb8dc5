package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.UnsupportedSchemaException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code tool_choice: "required"} and a named function, as vLLM serves them: the output is
 * guided by a JSON Schema, so the model cannot but call. Named, the output is the function's
 * arguments (its {@code parameters} schema) and becomes one call of it. Required, the output is
 * a JSON list of <code>{"name": ..., "parameters": {...}}</code> (each item one of the tools,
 * at least one, one at most with {@code parallel_tool_calls: false}) and becomes those calls.
 * Each tool's schema keeps its own definitions under the list's {@code $defs}, in a namespace of
 * its own.
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
                yield compile(parameters(t.tools().get(i)), "tools[" + i + "].function.parameters");
            }
            case REQUIRED -> {
                // each tool's own faults are named with the tool, before the list puts them together
                for (int i = 0; i < t.tools().size(); i++) {
                    compile(parameters(t.tools().get(i)), "tools[" + i + "].function.parameters");
                }
                yield compile(listSchema(t), "tools");
            }
            default -> null;
        };
    }

    /** A tool's parameters schema, or any object where it has none. */
    private static JsonNode parameters(Map<String, Object> tool) {
        Object p = function(tool).get("parameters");
        return p == null ? ANY_OBJECT : JSON.valueToTree(p);
    }

    private static final JsonNode ANY_OBJECT = JSON.createObjectNode().put("type", "object").put("additionalProperties", true);

    private static JsonSchemaMatcher compile(JsonNode schema, String where) {
        try {
            return JsonSchemaMatcher.compile(schema);
        } catch (UnsupportedSchemaException e) {
            throw ApiException.invalid(where, where + ": " + e.getMessage());
        }
    }

    /**
     * The required list's schema: items each one of the tools by name, with its parameters. Each
     * tool's parameters and definitions go under {@code $defs} in a namespace of their own
     * ({@code __tool_i}, {@code __tool_i__Name}), their references rewritten to match, so that
     * two tools' definitions of the same name stay apart and {@code #} still means the tool's own
     * parameters.
     */
    static ObjectNode listSchema(ToolRequests.Tools t) {
        ObjectNode list = JSON.createObjectNode();
        list.put("type", "array");
        list.put("minItems", 1);
        if (!t.parallel()) {
            list.put("maxItems", 1);
        }
        ArrayNode anyOf = list.putObject("items").putArray("anyOf");
        ObjectNode defs = JSON.createObjectNode();
        for (int i = 0; i < t.tools().size(); i++) {
            Map<String, Object> tool = t.tools().get(i);
            String ns = "__tool_" + i;
            ObjectNode p = ((ObjectNode) parameters(tool)).deepCopy();
            for (String key : new String[] {"$defs", "definitions"}) {
                if (p.remove(key) instanceof ObjectNode d) {
                    d.properties().forEach(e -> defs.set(ns + "__" + e.getKey(), namespaced(e.getValue(), ns)));
                }
            }
            defs.set(ns, namespaced(p, ns));
            ObjectNode item = anyOf.addObject();
            item.put("type", "object");
            ObjectNode props = item.putObject("properties");
            props.putObject("name").put("type", "string").putArray("enum").add((String) function(tool).get("name"));
            props.putObject("parameters").put("$ref", "#/$defs/" + ns);
            item.putArray("required").add("name").add("parameters");
        }
        list.set("$defs", defs);
        return list;
    }

    /** A copy of {@code schema} whose local references point into the tool's namespace. */
    private static JsonNode namespaced(JsonNode schema, String ns) {
        JsonNode copy = schema.deepCopy();
        rewrite(copy, ns);
        return copy;
    }

    private static void rewrite(JsonNode n, String ns) {
        if (n instanceof ObjectNode o) {
            if (o.get("$ref") instanceof com.fasterxml.jackson.databind.node.TextNode r) {
                String ref = r.textValue();
                if (ref.equals("#")) {
                    o.put("$ref", "#/$defs/" + ns);
                } else {
                    for (String prefix : new String[] {"#/$defs/", "#/definitions/"}) {
                        if (ref.startsWith(prefix)) {
                            o.put("$ref", "#/$defs/" + ns + "__" + ref.substring(prefix.length()));
                        }
                    }
                }
            }
            o.properties().forEach(e -> rewrite(e.getValue(), ns));
        } else if (n instanceof ArrayNode a) {
            a.forEach(e -> rewrite(e, ns));
        }
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
