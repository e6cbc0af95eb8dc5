package io.phxfs.serving.guided;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * Schemas of the kinds clients send for structured output and tool calls, and the same schemas
 * made explicit for an independent validator: the matcher's strict defaults (no undeclared
 * properties where {@code additionalProperties} is absent) and OpenAPI's {@code nullable} written
 * in standard JSON Schema.
 */
final class SchemaCorpus {
    static final ObjectMapper JSON = new ObjectMapper();

    record Entry(String name, JsonNode schema) {
        /**
         * Whether an enum or const value is an object, an array or a string with non-ASCII text:
         * such a value is accepted only as its compact JSON, so pretty-printed or ASCII-escaped
         * instances need not be.
         */
        boolean compactLiteralsOnly() {
            return hasStructuredLiteral(schema);
        }

        /**
         * Whether some object declares properties and allows additional ones: its free keys take no
         * escapes (see KeyExclusion), so ASCII-escaped instances need not be accepted.
         */
        boolean freeKeysBesideDeclaredOnes() {
            return mixesDeclaredAndFree(schema);
        }

        /**
         * Whether some string has a {@code pattern}: its content is read unescaped (the pattern's
         * automaton is over the characters themselves), so ASCII-escaped instances need not be accepted.
         */
        boolean patternStrings() {
            return schema.findValue("pattern") != null;
        }

        private static boolean mixesDeclaredAndFree(JsonNode n) {
            if (n.isObject() && n.path("properties").size() > 0 && n.has("additionalProperties")
                    && !n.get("additionalProperties").equals(JSON.getNodeFactory().booleanNode(false))) {
                return true;
            }
            for (JsonNode x : n) {
                if (x.isContainerNode() && mixesDeclaredAndFree(x)) {
                    return true;
                }
            }
            return false;
        }

        private static boolean hasStructuredLiteral(JsonNode n) {
            if (n.isObject()) {
                for (Map.Entry<String, JsonNode> e : n.properties()) {
                    if (e.getKey().equals("enum") || e.getKey().equals("const")) {
                        for (JsonNode v : e.getValue().isArray() && e.getKey().equals("enum") ? e.getValue()
                                : JSON.createArrayNode().add(e.getValue())) {
                            if (v.isContainerNode() || (v.isTextual() && !v.textValue().chars().allMatch(c -> c < 0x80))) {
                                return true;
                            }
                        }
                    } else if (hasStructuredLiteral(e.getValue())) {
                        return true;
                    }
                }
            } else if (n.isArray()) {
                for (JsonNode x : n) {
                    if (hasStructuredLiteral(x)) {
                        return true;
                    }
                }
            }
            return false;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static final List<Entry> ENTRIES = List.of(
            entry("nested objects", """
                    {"type":"object","properties":{
                      "name":{"type":"string"},
                      "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
                         "geo":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"]}},
                         "required":["city"]},
                      "age":{"type":"integer"}},
                     "required":["name","address"]}"""),
            entry("optional properties", """
                    {"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"boolean"},
                      "d":{"type":"null"}}}"""),
            entry("arrays with bounds", """
                    {"type":"object","properties":{
                      "tags":{"type":"array","items":{"type":"string","maxLength":5},"minItems":1,"maxItems":3},
                      "matrix":{"type":"array","items":{"type":"array","items":{"type":"integer"},"maxItems":2},"minItems":2},
                      "pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false,"minItems":2}},
                     "required":["tags","matrix","pair"]}"""),
            entry("enums", """
                    {"type":"object","properties":{
                      "color":{"enum":["red","redder","reddest","blue",1,12,null,true,{"k":[1,"é"]}]},
                      "size":{"type":"string","enum":["S","M","L","XL"]},
                      "level":{"type":"integer","enum":[1,2,3,10,100]}},
                     "required":["color","size","level"]}"""),
            entry("anyOf with shared prefixes", """
                    {"type":"array","items":{"anyOf":[
                      {"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind","x"]},
                      {"type":"object","properties":{"kind":{"const":"ab"},"x":{"type":"string"}},"required":["kind","x"]},
                      {"type":"object","properties":{"kindred":{"type":"boolean"}},"required":["kindred"]},
                      {"type":"string","maxLength":3},{"type":"string","minLength":5},
                      {"type":"integer"},{"type":"number"}]}}"""),
            entry("nullable", """
                    {"type":"object","properties":{
                      "x":{"type":"string","nullable":true},
                      "y":{"type":"integer","nullable":true},
                      "z":{"type":"object","properties":{"q":{"type":"boolean"}},"required":["q"],"nullable":true},
                      "w":{"type":["string","null"],"maxLength":2}},
                     "required":["x","y","z"]}"""),
            entry("recursive tree", """
                    {"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
                       "label":{"type":"string"},
                       "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},
                     "$ref":"#/$defs/node"}"""),
            entry("recursive root", """
                    {"type":"object","properties":{"head":{"type":"string"},"tail":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
                     "required":["head","tail"]}"""),
            entry("pydantic", """
                    {"$defs":{
                       "Color":{"enum":["red","green"],"title":"Color","type":"string"},
                       "Address":{"properties":{"street":{"title":"Street","type":"string"},
                          "zip":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Zip"}},
                          "required":["street"],"title":"Address","type":"object"}},
                     "properties":{"name":{"title":"Name","type":"string"},
                       "age":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"title":"Age"},
                       "address":{"allOf":[{"$ref":"#/$defs/Address"}],"description":"Home"},
                       "colors":{"items":{"$ref":"#/$defs/Color"},"title":"Colors","type":"array"},
                       "scores":{"additionalProperties":{"type":"number"},"title":"Scores","type":"object"}},
                     "required":["name","address"],"title":"Person","type":"object"}"""),
            entry("zod", """
                    {"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"number"},
                      "email":{"type":["string","null"]},"role":{"type":"string","enum":["admin","user"]},
                      "tags":{"type":"array","items":{"type":"string"},"maxItems":5},
                      "meta":{"type":"object","properties":{"created":{"type":"string"}},"required":["created"],
                         "additionalProperties":false}},
                     "required":["name","age","role"],"additionalProperties":false,
                     "$schema":"http://json-schema.org/draft-07/schema#","definitions":{}}"""),
            entry("tool calls", """
                    {"type":"array","minItems":1,"items":{"anyOf":[
                      {"type":"object","properties":{"name":{"const":"get_weather"},"parameters":{"type":"object",
                         "properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
                         "required":["city"]}},"required":["name","parameters"]},
                      {"type":"object","properties":{"name":{"const":"get_weather_forecast"},"parameters":{"type":"object",
                         "properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}},
                         "required":["name","parameters"]},
                      {"type":"object","properties":{"name":{"const":"get_time"},"parameters":{"type":"object",
                         "properties":{}}},"required":["name","parameters"]}]}}"""),
            entry("declared and additional properties", """
                    {"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"names":{"type":"array"}},
                     "required":["id"],"additionalProperties":{"type":["string","boolean"]}}"""),
            entry("free object", """
                    {"type":"object"}"""),
            entry("anything", """
                    {}"""),
            entry("type list and lengths", """
                    {"type":"array","items":{"type":["string","number","null","boolean"],"minLength":2,"maxLength":4}}"""),
            entry("const object and definitions", """
                    {"definitions":{"v":{"const":{"version":[1,2],"ok":true}}},
                     "type":"object","properties":{"v":{"$ref":"#/definitions/v"},"s":{"type":"string","nullable":true}},
                     "required":["v"]}"""),
            entry("formats", """
                    {"type":"object","properties":{"day":{"type":"string","format":"date"},
                      "at":{"type":"string","format":"date-time"},"t":{"type":["string","null"],"format":"time"},
                      "id":{"type":"string","format":"uuid","x-note":"OpenAPI extension","example":"x"},
                      "ids":{"type":"array","items":{"format":"uuid"},"maxItems":2}},
                     "required":["day","at","id"]}"""),
            entry("integer bounds", """
                    {"type":"object","properties":{"age":{"type":"integer","minimum":0,"maximum":130},
                      "delta":{"type":["integer","null"],"exclusiveMinimum":-50,"exclusiveMaximum":50.5},
                      "big":{"type":"integer","minimum":1000000},"neg":{"type":"integer","maximum":-10},
                      "choice":{"anyOf":[{"type":"integer","minimum":100,"maximum":199},{"type":"integer","minimum":150,"maximum":2500}]}},
                     "required":["age","big"]}"""),
            entry("patterns", """
                    {"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{2}-\\\\d{3}$"},
                      "color":{"type":["string","null"],"pattern":"^(red|green|blue)$"},
                      "mail":{"type":"string","pattern":"^[a-z0-9._-]+@[a-z]+\\\\.[a-z]{2,3}$","maxLength":14},
                      "tags":{"type":"array","items":{"type":"string","pattern":"^#[a-zé]+$"},"maxItems":2}},
                     "required":["code","mail"]}"""),
            entry("regular formats", """
                    {"type":"object","properties":{"email":{"type":"string","format":"email"},
                      "host":{"type":"string","format":"hostname","maxLength":12},
                      "ip":{"type":["string","null"],"format":"ipv4"},
                      "url":{"type":"string","format":"uri","minLength":1,"maxLength":2083},
                      "short":{"type":"string","pattern":"^[a-z]+$","maxLength":3}},
                     "required":["email","url"]}"""));

    private static Entry entry(String name, String json) {
        try {
            return new Entry(name, JSON.readTree(json));
        } catch (IOException e) {
            throw new IllegalArgumentException(name, e);
        }
    }

    /** The schema as an ordinary validator must read it to mean what the matcher enforces. */
    static JsonNode explicit(JsonNode schema) {
        if (schema.isArray()) {
            ArrayNode out = JSON.createArrayNode();
            schema.forEach(s -> out.add(explicit(s)));
            return out;
        }
        if (!schema.isObject()) {
            return schema;
        }
        ObjectNode out = JSON.createObjectNode();
        for (Map.Entry<String, JsonNode> e : schema.properties()) {
            String k = e.getKey();
            boolean schemaMap = k.equals("properties") || k.equals("$defs") || k.equals("definitions");
            boolean values = k.equals("enum") || k.equals("const") || k.equals("required") || k.equals("default")
                    || k.equals("examples");
            if (values) {
                out.set(k, e.getValue());
            } else if (schemaMap) {
                ObjectNode m = JSON.createObjectNode();
                e.getValue().properties().forEach(p -> m.set(p.getKey(), explicit(p.getValue())));
                out.set(k, m);
            } else if (!k.equals("nullable")) {
                out.set(k, explicit(e.getValue()));
            }
        }
        if (out.has("properties") && !out.has("additionalProperties")) {
            out.put("additionalProperties", false);
        }
        if (schema.path("nullable").asBoolean(false)) {
            ObjectNode wrapper = JSON.createObjectNode();
            for (String defs : List.of("$defs", "definitions")) {
                if (out.has(defs)) {
                    wrapper.set(defs, out.remove(defs));
                }
            }
            wrapper.set("anyOf", JSON.createArrayNode().add(out).add(JSON.createObjectNode().put("type", "null")));
            return wrapper;
        }
        return out;
    }

    private SchemaCorpus() {
    }
}
