package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The matcher against an independent validator (networknt's json-schema-validator) over the
 * corpus of {@link SchemaCorpus}: random valid instances, written compact and pretty-printed, are
 * read byte by byte and end accepting, every prefix staying live; and whatever the matcher accepts
 * after a mutation (a byte changed, dropped or added, a property dropped or added or moved, a
 * value of the wrong type, a string made too long) is JSON the validator accepts.
 */
class SchemaCorpusPropertyTest {
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    /** Formats are annotations in 2020-12 unless asserted: the matcher enforces them, so the oracle must too. */
    private static final SchemaRegistry ORACLES = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12,
            b -> b.schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));
    private static final Map<Integer, JsonSchemaMatcher> MATCHERS = new ConcurrentHashMap<>();
    private static final Map<Integer, Schema> VALIDATORS = new ConcurrentHashMap<>();
    private static final int LAST = SchemaCorpus.ENTRIES.size() - 1;
    /** Bytes a mutation puts in: structure, quotes, digits, letters, whitespace, UTF-8 lead and continuation bytes. */
    private static final byte[] MUTATION_BYTES = "{}[],:\"\\ -.0123456789eEtfnulxa\n".getBytes(StandardCharsets.UTF_8);

    private static JsonSchemaMatcher matcher(int i) {
        return MATCHERS.computeIfAbsent(i, k -> JsonSchemaMatcher.compile(SchemaCorpus.ENTRIES.get(k).schema()));
    }

    private static boolean oracleAccepts(int i, String text) {
        Schema v = VALIDATORS.computeIfAbsent(i,
                k -> ORACLES.getSchema(SchemaCorpus.explicit(SchemaCorpus.ENTRIES.get(k).schema()).toString()));
        return v.validate(text, InputFormat.JSON).isEmpty();
    }

    private static String name(int i) {
        return SchemaCorpus.ENTRIES.get(i).name();
    }

    private static List<String> serializations(int i, JsonNode instance) throws Exception {
        List<String> out = new ArrayList<>();
        out.add(JSON.writeValueAsString(instance));
        if (!SchemaCorpus.ENTRIES.get(i).compactLiteralsOnly()) {
            out.add(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(instance));
            if (!SchemaCorpus.ENTRIES.get(i).freeKeysBesideDeclaredOnes() && !SchemaCorpus.ENTRIES.get(i).patternStrings()) {
                out.add(JSON.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII).writeValueAsString(instance));
            }
            out.add("\n  " + JSON.writeValueAsString(instance) + " \n");
        }
        return out;
    }

    @Property(tries = 800)
    void validInstancesAreAcceptedByteByByteWithEveryPrefixLive(@ForAll @IntRange(min = 0, max = 19) int schema,
            @ForAll long seed) throws Exception {
        int i = Math.min(schema, LAST);
        JsonNode instance = new RandomInstances(SchemaCorpus.ENTRIES.get(i).schema(), seed).next();
        for (String text : serializations(i, instance)) {
            assertTrue(oracleAccepts(i, text), name(i) + ": the generator made an invalid instance " + text);
            byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
            int lastSignificant = text.stripTrailing().getBytes(StandardCharsets.UTF_8).length;
            MatchState s = matcher(i).start();
            for (int k = 0; k < bytes.length; k++) {
                if (k < lastSignificant) {
                    assertFalse(s.finished(), name(i) + ": finished before byte " + k + " of " + text);
                }
                s = s.advance(bytes[k] & 0xFF);
                assertNotNull(s, name(i) + ": byte " + k + " ('" + (char) bytes[k] + "') refused in " + text);
            }
            assertTrue(s.accepting(), name(i) + ": not accepting at the end of " + text);
            if (!instance.isNumber()) {
                assertTrue(s.finished(), name(i) + ": not finished at the end of " + text);
            }
        }
    }

    @Property(tries = 800)
    void whatTheMatcherAcceptsAfterAMutationTheValidatorAccepts(@ForAll @IntRange(min = 0, max = 19) int schema,
            @ForAll long seed) throws Exception {
        int i = Math.min(schema, LAST);
        Random rnd = new Random(seed ^ 0x5DEECE66DL);
        JsonNode instance = new RandomInstances(SchemaCorpus.ENTRIES.get(i).schema(), seed).next();
        byte[] valid = JSON.writeValueAsBytes(instance);
        List<byte[]> mutants = new ArrayList<>();
        for (int m = 0; m < 4; m++) {
            byte[] x = valid.clone();
            int at = rnd.nextInt(x.length);
            x[at] = rnd.nextInt(4) == 0 ? (byte) rnd.nextInt(256) : MUTATION_BYTES[rnd.nextInt(MUTATION_BYTES.length)];
            mutants.add(x);
            mutants.add(splice(valid, rnd.nextInt(valid.length), 1, new byte[0]));
            mutants.add(splice(valid, rnd.nextInt(valid.length + 1), 0,
                    new byte[] {MUTATION_BYTES[rnd.nextInt(MUTATION_BYTES.length)]}));
        }
        for (int m = 0; m < 6; m++) {
            JsonNode copy = instance.deepCopy();
            if (mutateStructure(copy, rnd) && !copy.equals(instance)) {
                mutants.add(JSON.writeValueAsBytes(copy));
            } else if (instance.isContainerNode() || instance.isTextual()) {
                JsonNode wrong = otherType(instance, rnd);
                mutants.add(JSON.writeValueAsBytes(wrong));
            }
        }
        for (byte[] mutant : mutants) {
            if (Bytes.accepts(matcher(i), mutant)) {
                String text = new String(mutant, StandardCharsets.UTF_8);
                JsonNode parsed = null;
                try {
                    parsed = JSON.readTree(mutant);
                } catch (Exception e) {
                    fail(name(i) + ": the matcher accepted what is not JSON: " + text + " (" + e.getMessage() + ")");
                }
                assertNotNull(parsed);
                if (hasInfiniteNumber(parsed)) {
                    continue; // valid JSON, but the validator reads a number past double's range as no number
                }
                assertTrue(oracleAccepts(i, text), name(i) + ": the matcher accepted an invalid instance " + text);
            }
        }
    }

    @Property(tries = 300)
    void droppedRequiredAndReorderedPropertiesAreRejected(@ForAll @IntRange(min = 0, max = 19) int schema,
            @ForAll long seed) throws Exception {
        int i = Math.min(schema, LAST);
        JsonNode root = SchemaCorpus.ENTRIES.get(i).schema();
        JsonNode declared = root.has("$ref") ? root.at(root.get("$ref").textValue().substring(1)) : root;
        JsonNode instance = new RandomInstances(root, seed).next();
        if (!(instance instanceof ObjectNode object) || !declared.has("properties")) {
            return;
        }
        Random rnd = new Random(seed);
        List<String> present = new ArrayList<>();
        object.fieldNames().forEachRemaining(present::add);
        List<String> required = new ArrayList<>();
        declared.path("required").forEach(r -> required.add(r.textValue()));
        if (!required.isEmpty()) {
            ObjectNode dropped = object.deepCopy();
            dropped.remove(required.get(rnd.nextInt(required.size())));
            String text = JSON.writeValueAsString(dropped);
            assertFalse(oracleAccepts(i, text), "the validator must reject " + text);
            assertFalse(Bytes.accepts(matcher(i), text), name(i) + ": accepted without a required property: " + text);
        }
        List<String> declaredPresent = present.stream().filter(k -> declared.path("properties").has(k)).toList();
        if (declaredPresent.size() >= 2) {
            int a = rnd.nextInt(declaredPresent.size() - 1);
            ObjectNode swapped = JSON.createObjectNode();
            List<String> order = new ArrayList<>(present);
            int ia = order.indexOf(declaredPresent.get(a));
            int ib = order.indexOf(declaredPresent.get(a + 1));
            order.set(ia, declaredPresent.get(a + 1));
            order.set(ib, declaredPresent.get(a));
            order.forEach(k -> swapped.set(k, object.get(k)));
            String text = JSON.writeValueAsString(swapped);
            assertTrue(oracleAccepts(i, text), "the validator ignores order: " + text);
            assertNull(Bytes.feed(matcher(i), text), name(i) + ": properties out of the schema's order accepted: " + text);
        }
        if (declared.path("additionalProperties").isMissingNode() || declared.path("additionalProperties").equals(F.booleanNode(false))) {
            ObjectNode extra = object.deepCopy();
            extra.put("undeclared", 1);
            String text = JSON.writeValueAsString(extra);
            assertFalse(oracleAccepts(i, text), "the validator must reject " + text);
            assertFalse(Bytes.accepts(matcher(i), text), name(i) + ": accepted an undeclared property: " + text);
        }
    }

    private static boolean hasInfiniteNumber(JsonNode n) {
        if (n.isNumber() && Double.isInfinite(n.doubleValue())) {
            return true;
        }
        for (JsonNode x : n) {
            if (hasInfiniteNumber(x)) {
                return true;
            }
        }
        return false;
    }

    private static byte[] splice(byte[] a, int at, int remove, byte[] insert) {
        at = Math.min(at, a.length - remove);
        byte[] out = new byte[a.length - remove + insert.length];
        System.arraycopy(a, 0, out, 0, at);
        System.arraycopy(insert, 0, out, at, insert.length);
        System.arraycopy(a, at + remove, out, at + insert.length, a.length - at - remove);
        return out;
    }

    /** Changes one random place inside a container: drops, adds or moves a property, retypes a value, lengthens a string. */
    private static boolean mutateStructure(JsonNode root, Random rnd) {
        List<JsonNode> containers = new ArrayList<>();
        collectContainers(root, containers);
        if (containers.isEmpty()) {
            return false;
        }
        JsonNode c = containers.get(rnd.nextInt(containers.size()));
        if (c instanceof ObjectNode o) {
            List<String> keys = new ArrayList<>();
            o.fieldNames().forEachRemaining(keys::add);
            int what = rnd.nextInt(5);
            if (keys.isEmpty() || what == 0) {
                o.put(keys.isEmpty() ? "extra" : keys.get(0) + "x", rnd.nextBoolean() ? F.numberNode(1) : F.textNode("v"));
            } else if (what == 1) {
                o.remove(keys.get(rnd.nextInt(keys.size())));
            } else if (what == 2 && keys.size() >= 2) {
                String k = keys.get(rnd.nextInt(keys.size()));
                JsonNode v = o.remove(k);
                o.set(k, v); // moved to the end
            } else {
                String k = keys.get(rnd.nextInt(keys.size()));
                o.set(k, what == 4 && o.get(k).isTextual() ? F.textNode(o.get(k).textValue() + "x".repeat(20))
                        : otherType(o.get(k), rnd));
            }
        } else {
            ArrayNode a = (ArrayNode) c;
            int what = rnd.nextInt(3);
            if (a.isEmpty() || what == 0) {
                a.add(a.isEmpty() ? F.numberNode(1) : a.get(0).deepCopy());
            } else if (what == 1) {
                a.remove(rnd.nextInt(a.size()));
            } else {
                int k = rnd.nextInt(a.size());
                a.set(k, otherType(a.get(k), rnd));
            }
        }
        return true;
    }

    private static void collectContainers(JsonNode n, List<JsonNode> out) {
        if (n.isContainerNode()) {
            out.add(n);
            n.forEach(x -> collectContainers(x, out));
        }
    }

    private static JsonNode otherType(JsonNode v, Random rnd) {
        List<JsonNode> options = new ArrayList<>(List.of(F.textNode("s"), F.numberNode(7), F.numberNode(2.5),
                F.booleanNode(true), F.nullNode(), F.objectNode(), F.arrayNode()));
        options.removeIf(o -> o.getNodeType() == v.getNodeType());
        return options.get(rnd.nextInt(options.size()));
    }

    @org.junit.jupiter.api.Test
    void theCorpusCompilesAndItsOracleReadsIt() {
        assertEquals(20, SchemaCorpus.ENTRIES.size(), "the properties' @IntRange covers the corpus");
        for (int i = 0; i <= LAST; i++) {
            assertNotNull(matcher(i));
            oracleAccepts(i, "null");
        }
    }
}
