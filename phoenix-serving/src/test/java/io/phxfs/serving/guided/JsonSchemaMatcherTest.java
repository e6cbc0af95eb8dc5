package io.phxfs.serving.guided;

import static io.phxfs.serving.guided.Bytes.accepts;
import static io.phxfs.serving.guided.Bytes.feed;
import static io.phxfs.serving.guided.Bytes.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The matcher on hand-written cases: what each keyword admits and refuses, the schemas it refuses
 * to compile, states' value equality, UTF-8 validation and the caps on whitespace and numbers.
 */
class JsonSchemaMatcherTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static JsonSchemaMatcher schema(String json) {
        try {
            return JsonSchemaMatcher.compile(JSON.readTree(json));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException(e);
        }
    }

    private static JsonNode tree(String json) {
        try {
            return JSON.readTree(json);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException(e);
        }
    }

    // --- the basics of each type ---

    @Test
    void stringsNumbersLiteralsAtTheTopLevel() {
        JsonSchemaMatcher s = schema("{\"type\":\"string\"}");
        assertTrue(accepts(s, "\"hello\""));
        assertTrue(accepts(s, "  \"a b\\n\\u00e9\\\"\"\n"));
        assertFalse(accepts(s, "\"open"));
        assertFalse(accepts(s, "12"));

        JsonSchemaMatcher n = schema("{\"type\":\"number\"}");
        for (String ok : new String[] {"0", "-0", "12", "-3.25", "1e9", "1E+9", "2.5e-3", "0.0"}) {
            assertTrue(accepts(n, ok), ok);
        }
        for (String bad : new String[] {"01", "-", "1.", ".5", "1e", "+1", "1.e3", "--1", "1e+", "NaN"}) {
            assertFalse(accepts(n, bad), bad);
        }
        JsonSchemaMatcher i = schema("{\"type\":\"integer\"}");
        assertTrue(accepts(i, "-42"));
        assertFalse(accepts(i, "4.2"));
        assertFalse(accepts(i, "4e2"));

        JsonSchemaMatcher b = schema("{\"type\":[\"boolean\",\"null\"]}");
        assertTrue(accepts(b, "true"));
        assertTrue(accepts(b, "false"));
        assertTrue(accepts(b, "null"));
        assertFalse(accepts(b, "tru"));
        assertFalse(accepts(b, "\"true\""));
    }

    @Test
    void aNumberAtTheTopLevelAcceptsOnceCompleteButIsNotFinished() {
        JsonSchemaMatcher n = schema("{\"type\":\"integer\"}");
        MatchState s = feed(n, "12");
        assertTrue(s.accepting());
        assertFalse(s.finished(), "more digits may follow");
        assertTrue(feed(n, "12 ").accepting());
        assertNull(feed(n, "12 3"));
        MatchState obj = feed(schema("{\"type\":\"object\"}"), "{}");
        assertTrue(obj.finished());
        assertFalse(feed(schema("{\"type\":\"object\"}"), "{").accepting());
    }

    @Test
    void objectsFollowTheDeclaredOrderAndRequiredness() {
        JsonSchemaMatcher m = schema("""
                {"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},
                 "required":["a","c"]}""");
        assertTrue(accepts(m, "{\"a\":1,\"b\":\"x\",\"c\":true}"));
        assertTrue(accepts(m, "{\"a\":1,\"c\":true}"));
        assertTrue(accepts(m, "{ \"a\" : 1 , \"c\" : false }"));
        assertFalse(accepts(m, "{\"a\":1}"), "c is required");
        assertFalse(accepts(m, "{\"c\":true,\"a\":1}"), "out of order");
        assertFalse(accepts(m, "{\"a\":1,\"c\":true,\"d\":1}"), "no additional properties when absent (strict)");
        assertFalse(accepts(m, "{\"a\":1,\"b\":\"x\",\"b\":\"y\",\"c\":true}"), "no repeats");
        assertFalse(accepts(m, "{\"a\":1,,\"c\":true}"));
        assertFalse(accepts(m, "{\"a\":1,\"c\":true,}"));
        assertNull(feed(m, "{\"c"), "a may not be skipped");
    }

    @Test
    void additionalPropertiesFollowTheDeclaredOnesAndCannotRepeatThem() {
        JsonSchemaMatcher m = schema("""
                {"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"],
                 "additionalProperties":{"type":"number"}}""");
        assertTrue(accepts(m, "{\"id\":1,\"name\":\"x\",\"score\":2.5,\"n\":3}"));
        assertTrue(accepts(m, "{\"id\":1,\"nam\":2,\"names\":3}"), "prefixes and extensions of a declared name are free keys");
        assertFalse(accepts(m, "{\"id\":1,\"score\":\"text\"}"), "extras take the additionalProperties schema");
        assertFalse(accepts(m, "{\"score\":1,\"id\":1}"), "extras come after the required ones");
        assertFalse(accepts(m, "{\"id\":1,\"score\":1,\"name\":\"x\"}"), "no declared property after an extra");
        assertFalse(accepts(m, "{\"id\":1,\"name\":3}"), "a declared name is not a free key");
        assertFalse(accepts(m, "{\"id\":1,\"id\":3}"));
        assertFalse(accepts(m, "{\"id\":1,\"na\\u006de\":3}"), "free keys of such objects take no escapes");

        JsonSchemaMatcher free = schema("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}");
        assertTrue(accepts(free, "{\"a\":1,\"b\\n\":2}"));
        assertFalse(accepts(free, "{\"a\":\"1\"}"));
        JsonSchemaMatcher none = schema("{\"type\":\"object\",\"additionalProperties\":false}");
        assertTrue(accepts(none, "{ }"));
        assertFalse(accepts(none, "{\"a\":1}"));
    }

    @Test
    void arraysCountTheirItems() {
        JsonSchemaMatcher m = schema("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}");
        assertFalse(accepts(m, "[]"));
        assertTrue(accepts(m, "[1]"));
        assertTrue(accepts(m, "[ 1 , 2 ,3 ]"));
        assertFalse(accepts(m, "[1,2,3,4]"));
        assertNull(feed(m, "[1,2,3,"), "a fourth item cannot start");
        assertFalse(accepts(m, "[1,]"));
        assertFalse(accepts(m, "[\"1\"]"));

        JsonSchemaMatcher tuple = schema("""
                {"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}""");
        assertTrue(accepts(tuple, "[\"a\",1]"));
        assertTrue(accepts(tuple, "[\"a\"]"));
        assertFalse(accepts(tuple, "[1]"));
        assertFalse(accepts(tuple, "[\"a\",1,2]"));
        JsonSchemaMatcher open = schema("{\"prefixItems\":[{\"type\":\"string\"}]}");
        assertTrue(accepts(open, "[\"a\",1,{\"x\":[]}]"), "items absent: any items after the prefix");
    }

    @Test
    void stringLengthsCountCodePointsAndEscapes() {
        JsonSchemaMatcher m = schema("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}");
        assertFalse(accepts(m, "\"a\""));
        assertTrue(accepts(m, "\"ab\""));
        assertTrue(accepts(m, "\"abc\""));
        assertFalse(accepts(m, "\"abcd\""));
        assertNull(feed(m, "\"abcd"), "the fourth character is refused as it starts");
        assertTrue(accepts(m, "\"é中😀\""), "three code points of 2, 3 and 4 bytes");
        assertTrue(accepts(m, "\"\\n\\u00e9\\\"\""), "an escape is one character");
        assertTrue(accepts(m, "\"a\\ud83d\\ude00\""), "an escaped surrogate pair is one character");
        assertFalse(accepts(m, "\"ab\\ud83d\\ude00c\""));
    }

    @Test
    void enumsAndConstsAreTheirCompactJson() {
        JsonSchemaMatcher e = schema("{\"enum\":[\"red\",\"redder\",1,12,null,{\"a\":[1,2]},\"é\"]}");
        for (String ok : new String[] {"\"red\"", "\"redder\"", "1", "12", "null", "{\"a\":[1,2]}", " \"é\" "}) {
            assertTrue(accepts(e, ok), ok);
        }
        for (String bad : new String[] {"\"re\"", "\"reddest\"", "2", "123", "{\"a\": [1,2]}", "1.0"}) {
            assertFalse(accepts(e, bad), bad);
        }
        assertTrue(feed(e, "\"red\"").finished());
        assertFalse(feed(e, "1").finished(), "12 may follow");
        JsonSchemaMatcher typed = schema("{\"type\":\"string\",\"enum\":[\"a\",1]}");
        assertFalse(accepts(typed, "1"), "enum values of another type are dropped");
        JsonSchemaMatcher c = schema("{\"const\":\"get_weather\"}");
        assertTrue(accepts(c, "\"get_weather\""));
        assertFalse(accepts(c, "\"get_weathe\""));
        JsonSchemaMatcher nullableEnum = schema("{\"type\":\"string\",\"enum\":[\"a\"],\"nullable\":true}");
        assertTrue(accepts(nullableEnum, "null"));
    }

    @Test
    void anyOfWithSharedPrefixesKeepsEveryAlternativeAlive() {
        JsonSchemaMatcher m = schema("""
                {"anyOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind","x"]},
                          {"type":"object","properties":{"kind":{"const":"ab"},"y":{"type":"string"}},"required":["kind","y"]},
                          {"type":"string","maxLength":2},{"type":"integer"}]}""");
        assertTrue(accepts(m, "{\"kind\":\"a\",\"x\":1}"));
        assertTrue(accepts(m, "{\"kind\":\"ab\",\"y\":\"s\"}"));
        assertFalse(accepts(m, "{\"kind\":\"a\",\"y\":\"s\"}"));
        assertFalse(accepts(m, "{\"kind\":\"ab\",\"x\":1}"));
        assertTrue(accepts(m, "\"ab\""));
        assertFalse(accepts(m, "\"abc\""));
        assertTrue(accepts(m, "7"));
        assertNotNull(feed(m, "{\"kind\":\"a"));
    }

    @Test
    void manyAlternativesAtOnce() {
        // twelve tools: twelve live configurations after "{", past the linear deduplication
        StringBuilder tools = new StringBuilder("{\"type\":\"array\",\"minItems\":1,\"items\":{\"anyOf\":[");
        for (int t = 0; t < 12; t++) {
            tools.append(t == 0 ? "" : ",").append("{\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"tool_")
                    .append(t).append("\"},\"parameters\":{\"type\":\"object\",\"properties\":{\"p").append(t)
                    .append("\":{\"type\":\"integer\"}},\"required\":[\"p").append(t).append("\"]}},\"required\":[\"name\",\"parameters\"]}");
        }
        JsonSchemaMatcher m = schema(tools.append("]}}").toString());
        assertTrue(accepts(m, "[{\"name\":\"tool_11\",\"parameters\":{\"p11\":3}},{\"name\":\"tool_1\",\"parameters\":{\"p1\":4}}]"));
        assertFalse(accepts(m, "[{\"name\":\"tool_11\",\"parameters\":{\"p1\":3}}]"));
        assertFalse(accepts(m, "[{\"name\":\"tool_12\",\"parameters\":{\"p12\":3}}]"));
        assertEquals(feed(m, "[{\"name\":\"tool_"), feed(m, "[ {\"name\": \"tool_"));
    }

    @Test
    void tooManyLiveAlternativesAreRefusedWithAClearMessage() {
        // two alike branches at every level: each "[" doubles the readings of the output
        JsonSchemaMatcher m = schema("{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}},"
                + "{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"maxItems\":5}]}");
        MatchState s = feed(m, "[".repeat(10));
        assertNotNull(s, "2^10 = 1024 readings are still guided");
        assertTrue(accepts(m, "[".repeat(10) + "]".repeat(10)));
        MatchState at = s;
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> at.advance('['));
        assertTrue(e.getMessage().contains("too ambiguous to guide") && e.getMessage().contains("2048")
                && e.getMessage().contains("1024"), e.getMessage());
        // the vocabulary's walk and the guide pass it on: the engine fails that request only
        GuidedVocabulary v = GuidedVocabulary.of(new byte[][] {utf8("["), utf8("]"), utf8("[[")});
        assertThrows(IllegalStateException.class, () -> v.allowed(at));
        // a deep value whose schema is not ambiguous stays one reading
        JsonSchemaMatcher tree = schema("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}");
        assertTrue(accepts(tree, "[".repeat(3000) + "]".repeat(3000)));
    }

    @Test
    void datesTimesAndUuidsAreTheirFormats() {
        JsonSchemaMatcher date = schema("{\"type\":\"string\",\"format\":\"date\"}");
        for (String ok : new String[] {"2024-02-29", "2000-02-29", "2023-12-31", "0001-01-01", "1999-04-30"}) {
            assertTrue(accepts(date, "\"" + ok + "\""), ok);
        }
        for (String bad : new String[] {"2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "2023-00-10", "2023-01-00",
            "2023-01-32", "2023-1-01", "20230101", "2023-01-01T", "2023-01-0", ""}) {
            assertFalse(accepts(date, "\"" + bad + "\""), bad);
        }
        // every day of some years, and the days around them, as java.time's calendar has them
        for (int year : new int[] {0, 4, 100, 1900, 2000, 2023, 2024, 9999}) {
            for (int month = 0; month <= 13; month++) {
                for (int day = 0; day <= 32; day++) {
                    String text = String.format("%04d-%02d-%02d", year, month, day);
                    boolean exists;
                    try {
                        java.time.LocalDate.parse(text);
                        exists = true;
                    } catch (java.time.format.DateTimeParseException e) {
                        exists = false;
                    }
                    assertEquals(exists, accepts(date, "\"" + text + "\""), text);
                }
            }
        }
        assertNull(feed(date, "\"2023-02-3"), "no day of February starts with 3");
        assertNotNull(feed(date, "\"2023-04-3"));
        assertNull(feed(date, "\"2023-04-31"));

        JsonSchemaMatcher time = schema("{\"type\":\"string\",\"format\":\"time\"}");
        for (String ok : new String[] {"00:00:00Z", "23:59:59+01:00", "12:30:05.123Z", "08:00:00.123456789-18:00", "01:02:03+17:59"}) {
            assertTrue(accepts(time, "\"" + ok + "\""), ok);
        }
        for (String bad : new String[] {"24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z", "12:00:00+1:00",
            "12:00:00+24:00", "12:00:00+18:01", "12:00:00-19:00", "12:00:00.Z", "12:00:00.1234567890Z", "12:00:00z"}) {
            assertFalse(accepts(time, "\"" + bad + "\""), bad);
        }

        JsonSchemaMatcher dateTime = schema("{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"}");
        assertTrue(accepts(dateTime, "\"2024-02-29T23:59:59.5+05:30\""));
        assertTrue(accepts(dateTime, "null"));
        assertFalse(accepts(dateTime, "\"2024-02-29 23:59:59Z\""));
        assertFalse(accepts(dateTime, "\"2024-02-29\""));

        JsonSchemaMatcher uuid = schema("{\"format\":\"uuid\"}");
        assertTrue(accepts(uuid, "\"123e4567-e89b-12d3-A456-426614174000\""));
        assertFalse(accepts(uuid, "\"123e4567e89b12d3a456426614174000\""));
        assertFalse(accepts(uuid, "\"123e4567-e89b-12d3-a456-42661417400g\""));
        assertFalse(accepts(uuid, "1"), "a format without a type makes a string");
        // a format on another type is about strings only
        assertTrue(accepts(schema("{\"type\":\"integer\",\"format\":\"date\"}"), "12"));
    }

    @Test
    void integerBoundsAreReadDigitByDigit() {
        long[][] ranges = {{-5, 120}, {1, 1}, {-20, -10}, {0, 0}, {7, 7000}, {-1000, -999}, {-3, 3}, {100, 199}, {-9, 9000}};
        java.util.List<String> candidates = new java.util.ArrayList<>();
        for (int v = -12_000; v <= 12_000; v++) {
            candidates.add(Integer.toString(v));
        }
        candidates.addAll(java.util.List.of("-0", "00", "01", "-01", "1.0", "1e2", "-", ""));
        for (long[] r : ranges) {
            JsonSchemaMatcher m = schema("{\"type\":\"integer\",\"minimum\":" + r[0] + ",\"maximum\":" + r[1] + "}");
            java.util.Set<String> prefixes = new java.util.HashSet<>();
            for (long v = r[0]; v <= r[1]; v++) {
                String text = Long.toString(v);
                for (int k = 1; k <= text.length(); k++) {
                    prefixes.add(text.substring(0, k));
                }
            }
            for (String c : candidates) {
                boolean inRange = !c.equals("-0") && c.matches("-?(0|[1-9][0-9]*)") && Long.parseLong(c) >= r[0]
                        && Long.parseLong(c) <= r[1];
                assertEquals(inRange, accepts(m, c), c + " in " + r[0] + ".." + r[1]);
                // live exactly where some integer of the range begins so
                assertEquals(prefixes.contains(c), !c.isEmpty() && feed(m, c) != null, "prefix " + c + " of " + r[0] + ".." + r[1]);
            }
        }
        JsonSchemaMatcher exclusive = schema("{\"type\":[\"integer\",\"null\"],\"exclusiveMinimum\":0,\"exclusiveMaximum\":2.5}");
        assertFalse(accepts(exclusive, "0"));
        assertTrue(accepts(exclusive, "1") && accepts(exclusive, "2") && accepts(exclusive, "null"));
        assertFalse(accepts(exclusive, "3"));
        JsonSchemaMatcher big = schema("{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":1e6}}");
        assertTrue(accepts(big, "[1000000, 9223372036854775807]"));
        assertFalse(accepts(big, "[999999]"));
        assertNotNull(feed(big, "[9"), "9,000,000 is still ahead");
        assertFalse(accepts(big, "[92233720368547758070]"), "past the longs");
        // bounds that leave nothing: no integer, the other types stay
        JsonSchemaMatcher none = schema("{\"type\":[\"integer\",\"string\"],\"minimum\":5,\"maximum\":4}");
        assertNull(feed(none, "5"));
        assertTrue(accepts(none, "\"s\""));
    }

    @Test
    void recursiveSchemasThroughDefsAndTheRoot() {
        JsonSchemaMatcher tree = schema("""
                {"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
                  "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},
                 "$ref":"#/$defs/node"}""");
        assertTrue(accepts(tree, "{\"value\":1,\"children\":[{\"value\":2},{\"value\":3,\"children\":[{\"value\":4,\"children\":[]}]}]}"));
        assertFalse(accepts(tree, "{\"value\":1,\"children\":[{\"children\":[]}]}"));
        JsonSchemaMatcher list = schema("""
                {"type":"object","properties":{"head":{"type":"string"},"tail":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
                 "required":["head","tail"]}""");
        assertTrue(accepts(list, "{\"head\":\"a\",\"tail\":{\"head\":\"b\",\"tail\":null}}"));
        StringBuilder deep = new StringBuilder();
        for (int i = 0; i < 2000; i++) {
            deep.append("{\"head\":\"x\",\"tail\":");
        }
        deep.append("null").append("}".repeat(2000));
        assertTrue(accepts(list, deep.toString()), "nesting is bounded only by memory");
    }

    @Test
    void nullableAndBooleanSchemas() {
        JsonSchemaMatcher m = schema("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\",\"nullable\":true},"
                + "\"never\":false,\"any\":true},\"required\":[\"x\"]}");
        assertTrue(accepts(m, "{\"x\":null}"));
        assertTrue(accepts(m, "{\"x\":\"s\",\"any\":[1,{\"q\":null}]}"));
        assertFalse(accepts(m, "{\"x\":\"s\",\"never\":1}"));
        assertTrue(accepts(schema("true"), "[1, \"two\", {\"three\": 3.0}]"));
        assertTrue(accepts(schema("{}"), "\"just a string\""));
        assertNull(schema("false").start().advance('1'));
    }

    @Test
    void pydanticStyleOutput() {
        JsonSchemaMatcher m = schema("""
                {"$defs":{"Address":{"properties":{"street":{"title":"Street","type":"string"},
                   "zip":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Zip"}},
                   "required":["street"],"title":"Address","type":"object"}},
                 "properties":{"name":{"title":"Name","type":"string"},
                   "address":{"allOf":[{"$ref":"#/$defs/Address"}],"description":"where"},
                   "tags":{"items":{"type":"string"},"title":"Tags","type":"array"}},
                 "required":["name","address"],"title":"Person","type":"object"}""");
        assertTrue(accepts(m, "{\"name\":\"Ann\",\"address\":{\"street\":\"Main\",\"zip\":null},\"tags\":[\"a\"]}"));
        assertTrue(accepts(m, "{\"name\":\"Ann\",\"address\":{\"street\":\"Main\"}}"));
        assertFalse(accepts(m, "{\"name\":\"Ann\",\"address\":{\"zip\":\"1\"}}"));
    }

    // --- anyObject ---

    @Test
    void anyObjectAcceptsObjectsOnly() {
        JsonSchemaMatcher m = JsonSchemaMatcher.anyObject();
        assertTrue(accepts(m, "{}"));
        assertTrue(accepts(m, "\n{\"a\": [1, 2.5, {\"b\": null}], \"c\": {\"d\": \"\\u00e9\"}, \"a\": true}\n"));
        assertTrue(feed(m, "{\"x\":1}").finished());
        for (String bad : new String[] {"[]", "\"s\"", "1", "null", "true", "{\"a\"}", "{a:1}", "{\"a\":1,}", "{}{}"}) {
            assertFalse(accepts(m, bad), bad);
        }
        assertNull(m.start().advance('['));
        assertNull(m.start().advance('"'));
    }

    // --- refused schemas ---

    static Stream<Arguments> refusedSchemas() {
        return Stream.of(
                Arguments.of("{\"type\":\"object\",\"properties\":{\"age\":{\"type\":\"number\",\"minimum\":0}}}", "/properties/age", "minimum"),
                Arguments.of("{\"minimum\":0}", "", "minimum"),
                Arguments.of("{\"type\":[\"integer\",\"number\"],\"maximum\":0}", "", "maximum"),
                Arguments.of("{\"type\":\"integer\",\"exclusiveMinimum\":true,\"minimum\":1}", "", "exclusiveMinimum"),
                Arguments.of("{\"type\":\"string\",\"pattern\":\"^(?=a)a$\"}", "", "pattern"),
                Arguments.of("{\"type\":\"string\",\"pattern\":\"^\\\"q\\\"$\"}", "", "pattern"),
                Arguments.of("{\"type\":\"string\",\"format\":\"date\",\"pattern\":\"^2\"}", "", "pattern"),
                Arguments.of("{\"type\":\"string\",\"pattern\":\"a+\",\"minLength\":5000}", "", "pattern"),
                Arguments.of("{\"type\":\"string\",\"pattern\":\"a{5}\",\"maxLength\":4}", "", "pattern"),
                Arguments.of("{\"type\":\"string\",\"format\":\"ipv4\",\"maxLength\":6}", "", "format"),
                Arguments.of("{\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"ipv6\"}}}", "/properties/d", "format"),
                Arguments.of("{\"type\":\"integer\",\"format\":\"int32\"}", "", "format"),
                Arguments.of("{\"type\":\"string\",\"format\":\"date\",\"maxLength\":8}", "", "maxLength"),
                Arguments.of("{\"type\":\"number\",\"maximum\":3}", "", "maximum"),
                Arguments.of("{\"type\":\"number\",\"exclusiveMinimum\":3}", "", "exclusiveMinimum"),
                Arguments.of("{\"type\":\"number\",\"exclusiveMaximum\":3}", "", "exclusiveMaximum"),
                Arguments.of("{\"type\":\"integer\",\"multipleOf\":3}", "", "multipleOf"),
                Arguments.of("{\"type\":\"array\",\"items\":{\"type\":\"array\",\"uniqueItems\":true}}", "/items", "uniqueItems"),
                Arguments.of("{\"type\":\"object\",\"patternProperties\":{\"^x\":{}}}", "", "patternProperties"),
                Arguments.of("{\"type\":\"object\",\"propertyNames\":{\"maxLength\":3}}", "", "propertyNames"),
                Arguments.of("{\"not\":{\"type\":\"string\"}}", "", "not"),
                Arguments.of("{\"if\":{},\"then\":{}}", "", "if"),
                Arguments.of("{\"type\":\"object\",\"dependentRequired\":{\"a\":[\"b\"]}}", "", "dependentRequired"),
                Arguments.of("{\"type\":\"object\",\"dependentSchemas\":{\"a\":{}}}", "", "dependentSchemas"),
                Arguments.of("{\"type\":\"object\",\"minProperties\":1}", "", "minProperties"),
                Arguments.of("{\"type\":\"object\",\"maxProperties\":1}", "", "maxProperties"),
                Arguments.of("{\"type\":\"array\",\"contains\":{\"type\":\"integer\"}}", "", "contains"),
                Arguments.of("{\"type\":\"object\",\"unevaluatedProperties\":false}", "", "unevaluatedProperties"),
                Arguments.of("{\"$defs\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\"}}}},\"$ref\":\"#/$defs/a/properties/b\"}", "", "$ref"),
                Arguments.of("{\"$ref\":\"https://example.com/s.json\"}", "", "$ref"),
                Arguments.of("{\"$ref\":\"#/$defs/missing\"}", "", "$ref"),
                Arguments.of("{\"allOf\":[{\"type\":\"object\"},{\"required\":[\"a\"]}]}", "", "allOf"),
                Arguments.of("{\"type\":\"object\",\"anyOf\":[{}]}", "", "type"),
                Arguments.of("{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"null\"}]}},\"$ref\":\"#/$defs/a\"}", "/$defs/a", "$ref"),
                Arguments.of("{\"type\":\"object\",\"properties\":{\"a~/b\":{\"xunknown\":1}}}", "/properties/a~0~1b", "xunknown"),
                Arguments.of("{\"type\":\"object\",\"required\":[\"a\"]}", "", "required"),
                Arguments.of("{\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}", "", "items"),
                Arguments.of("{\"type\":\"strung\"}", "", "type"),
                Arguments.of("{\"enum\":[\"a\",\"b\"],\"maxLength\":1}", "", "maxLength"),
                Arguments.of("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\",\"minimum\":1}]}", "/anyOf/1", "minimum"));
    }

    @ParameterizedTest
    @MethodSource("refusedSchemas")
    void unsupportedKeywordsAreRefusedNamingPointerAndKeyword(String schema, String pointer, String keyword) {
        UnsupportedSchemaException e = assertThrows(UnsupportedSchemaException.class,
                () -> JsonSchemaMatcher.compile(tree(schema)));
        assertEquals(pointer, e.pointer(), e.getMessage());
        assertEquals(keyword, e.keyword(), e.getMessage());
        assertTrue(e.getMessage().contains(keyword) && e.getMessage().contains("guided decoding cannot enforce"),
                e.getMessage());
    }

    @Test
    void annotationsAreIgnored() {
        JsonSchemaMatcher m = schema("""
                {"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:x","$comment":"c","title":"T",
                 "description":"d","default":{},"examples":[{}],"deprecated":false,"readOnly":false,"writeOnly":false,
                 "strict":true,"type":"object","properties":{"a":{"type":"string","title":"A","example":"x",
                 "x-order":1,"x-vendor":{"minimum":3}}},"required":["a"],"x-generator":"openapi"}""");
        assertTrue(accepts(m, "{\"a\":\"x\"}"));
    }

    // --- state equality ---

    @Test
    void equalPositionsReachedByDifferentBytesAreEqualStates() {
        JsonSchemaMatcher m = schema("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"}}}");
        MatchState ab = feed(m, "{\"s\":\"ab");
        MatchState cd = feed(m, "{\"s\":\"cd");
        assertEquals(ab, cd);
        assertEquals(ab.hashCode(), cd.hashCode());
        assertEquals(feed(m, "{\"s\":\"x\\n"), feed(m, "{\"s\":\"é"), "an escape and a 2-byte character end at the same place");
        assertNotEquals(feed(m, "{\"s\":\"ab"), feed(m, "{\"s\":\"ab\\"), "mid-escape differs");
        assertEquals(feed(m, "{\"s\":\"a\",\"n\":12"), feed(m, "{\"s\":\"bcd\",\"n\":34"));
        JsonSchemaMatcher any = JsonSchemaMatcher.anyObject();
        assertEquals(feed(any, "{\"k\":[{\"a\":\"xyz"), feed(any, "{\"other\":[{\"b\":\"q"));
        assertEquals(feed(any, "{\"a\":[1,2,"), feed(any, "{\"b\":[true,"));
        JsonSchemaMatcher withExtras = schema("{\"properties\":{\"name\":{}},\"additionalProperties\":true}");
        assertEquals(feed(withExtras, "{\"nx"), feed(withExtras, "{\"zz"), "a key that left the declared names behind is a free key");
        assertNotEquals(feed(withExtras, "{\"na"), feed(withExtras, "{\"zz"));
        // a state that reads a byte inside free text without changing is the same object
        MatchState s = feed(m, "{\"s\":\"abc");
        assertTrue(s == s.advance('d'));
    }

    // --- UTF-8 ---

    private static byte[] string(int... bytes) {
        byte[] out = new byte[bytes.length + 2];
        out[0] = '"';
        for (int i = 0; i < bytes.length; i++) {
            out[i + 1] = (byte) bytes[i];
        }
        out[out.length - 1] = '"';
        return out;
    }

    @Test
    void utf8IsValidatedByteByByte() {
        JsonSchemaMatcher m = schema("{\"type\":\"string\"}");
        assertTrue(accepts(m, utf8("\"é中😀\u0800\uFFFD\"")));
        assertTrue(accepts(m, string(0xF4, 0x8F, 0xBF, 0xBF)), "U+10FFFF");
        assertTrue(accepts(m, string(0xEE, 0x80, 0x80)), "U+E000, past the surrogates");
        int[][] invalid = {
            {0x80}, // a lone continuation byte
            {0xC0, 0x80}, {0xC1, 0xBF}, // overlong 2-byte
            {0xE0, 0x80, 0x80}, {0xE0, 0x9F, 0xBF}, // overlong 3-byte
            {0xED, 0xA0, 0x80}, {0xED, 0xBF, 0xBF}, // UTF-16 surrogates
            {0xF0, 0x80, 0x80, 0x80}, {0xF0, 0x8F, 0xBF, 0xBF}, // overlong 4-byte
            {0xF4, 0x90, 0x80, 0x80}, {0xF5, 0x80, 0x80, 0x80}, {0xFF}, // past U+10FFFF
            {0xC3}, {0xE4, 0xB8}, {0xF0, 0x9F, 0x98}, // truncated before the quote
            {0xC3, 0x41}, // a lead byte without its continuation
            {0x01}, {0x1F}, {0x0A}, {0x09}, // raw control characters
        };
        for (int[] bad : invalid) {
            assertFalse(accepts(m, string(bad)), java.util.Arrays.toString(bad));
        }
        assertTrue(accepts(m, "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041 \\uabCD \\uD83D\\uDE00\""));
        for (String bad : new String[] {"\"\\x\"", "\"\\u12G4\"", "\"\\u123\"", "\"\\uDE00\"", "\"\\uD83D\"", "\"\\uD83Dx\"",
            "\"\\uD83D\\u0041\"", "\"\\'\""}) {
            assertFalse(accepts(m, bad), bad);
        }
    }

    // --- caps ---

    @Test
    void whitespaceRunsAreCapped() {
        JsonSchemaMatcher m = JsonSchemaMatcher.anyObject();
        String ws64 = " ".repeat(JsonWhitespace.MAX_RUN);
        assertTrue(accepts(m, ws64 + "{" + ws64 + "\"a\"" + ws64 + ":" + ws64 + "[" + ws64 + "1" + ws64 + "]" + ws64 + "}" + ws64));
        assertNull(feed(m, ws64 + " "));
        assertNull(feed(m, "{" + ws64 + " "));
        assertNull(feed(m, "{\"a\":1}" + ws64 + "\n"));
        assertNull(feed(m, "{\"a\"" + ws64 + "\t"));
        MatchState end = feed(m, "{}" + ws64);
        assertTrue(end.finished());
        String indent = "\n" + "  ".repeat(31); // 63 bytes: 31 levels of two-space pretty printing
        assertNotNull(feed(m, "{\"a\":" + indent + "1"));
    }

    @Test
    void numbersAreCapped() {
        JsonSchemaMatcher m = schema("{\"type\":\"array\",\"items\":{\"type\":\"number\"}}");
        String digits32 = "1".repeat(NumberLexer.MAX_LENGTH);
        assertTrue(accepts(m, "[" + digits32 + "]"));
        assertNull(feed(m, "[" + digits32 + "1"));
        String almost = "-" + "1".repeat(NumberLexer.MAX_LENGTH - 2);
        assertNotNull(feed(m, "[" + almost));
        assertNull(feed(m, "[" + almost + "."), "no room left for a fraction digit: refused at the dot");
        assertTrue(accepts(m, "[" + almost + "2]"));
        MatchState top = feed(schema("{\"type\":\"integer\"}"), "1".repeat(NumberLexer.MAX_LENGTH));
        assertTrue(top.accepting());
        assertTrue(top.finished(), "a number at the cap cannot go on");
    }
}
