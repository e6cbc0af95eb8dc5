package io.phxfs.serving.guided;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Random instances of a schema in the supported subset, with properties in the schema's order:
 * what a model under guided decoding may write. Deliberately independent of the matcher's code (it
 * reads the schema JSON directly), so that the two can disagree.
 */
final class RandomInstances {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final int MAX_DEPTH = 7;
    /** Characters for random strings: ASCII, JSON's special ones, controls, 2-, 3- and 4-byte UTF-8. */
    private static final String[] CHARS = {"a", "b", "z", "Q", "0", " ", "_", "-", "\"", "\\", "/", "\n", "\t", "\u0001",
        "\u001f", "é", "ß", "中", "文", "\u20ac", "😀", "𝄞", "{", "}", "[", "]", ",", ":"};

    /** A schema branch too deep to finish; the caller tries another. */
    private static final class TooDeep extends RuntimeException {
        TooDeep() {
            super(null, null, false, false);
        }
    }

    private final JsonNode root;
    private final Random rnd;

    RandomInstances(JsonNode root, long seed) {
        this.root = root;
        this.rnd = new Random(seed);
    }

    JsonNode next() {
        for (int attempt = 0; attempt < 50; attempt++) {
            try {
                return gen(root, 0);
            } catch (TooDeep e) {
                // another roll of the dice
            }
        }
        throw new IllegalStateException("no finite instance found for " + root);
    }

    private JsonNode gen(JsonNode s, int depth) {
        if (depth > MAX_DEPTH + 5) {
            throw new TooDeep();
        }
        if (s.isBoolean()) {
            if (!s.booleanValue()) {
                throw new TooDeep();
            }
            return any(depth);
        }
        if (s.path("nullable").asBoolean(false) && rnd.nextInt(4) == 0) {
            return F.nullNode();
        }
        if (s.has("$ref")) {
            String ref = s.get("$ref").textValue().substring(1);
            return gen(ref.isEmpty() ? root : root.at(ref), depth + 1);
        }
        for (String c : List.of("anyOf", "oneOf")) {
            if (s.has(c)) {
                List<JsonNode> branches = new ArrayList<>();
                s.get(c).forEach(branches::add);
                java.util.Collections.shuffle(branches, rnd);
                for (JsonNode b : branches) {
                    try {
                        return gen(b, depth + 1);
                    } catch (TooDeep e) {
                        // next branch
                    }
                }
                throw new TooDeep();
            }
        }
        if (s.has("allOf")) {
            return gen(s.get("allOf").get(0), depth);
        }
        if (s.has("const")) {
            return s.get("const");
        }
        if (s.has("enum")) {
            List<JsonNode> values = new ArrayList<>();
            s.get("enum").forEach(values::add);
            if (s.has("type")) {
                values.removeIf(v -> !types(s).contains(typeOf(v)) && !(typeOf(v).equals("integer") && types(s).contains("number")));
            }
            return values.get(rnd.nextInt(values.size()));
        }
        List<String> types = types(s);
        if (types.isEmpty()) {
            return any(depth);
        }
        return switch (types.get(rnd.nextInt(types.size()))) {
            case "string" -> F.textNode(s.has("format") ? formatted(s.get("format").textValue())
                    : s.has("pattern") ? patterned(s.get("pattern").textValue(), s.path("maxLength").asInt(Integer.MAX_VALUE))
                    : string(s.path("minLength").asInt(0), s.path("maxLength").asInt(Integer.MAX_VALUE)));
            case "integer" -> s.has("minimum") || s.has("maximum") || s.has("exclusiveMinimum") || s.has("exclusiveMaximum")
                    ? boundedInteger(s) : integer();
            case "number" -> number();
            case "boolean" -> F.booleanNode(rnd.nextBoolean());
            case "null" -> F.nullNode();
            case "object" -> object(s, depth);
            default -> array(s, depth);
        };
    }

    private static String typeOf(JsonNode v) {
        return v.isTextual() ? "string" : v.isIntegralNumber() ? "integer" : v.isNumber() ? "number"
                : v.isBoolean() ? "boolean" : v.isNull() ? "null" : v.isObject() ? "object" : "array";
    }

    private static List<String> types(JsonNode s) {
        JsonNode t = s.get("type");
        List<String> out = new ArrayList<>();
        if (t == null) {
            if (s.has("properties") || s.has("additionalProperties") || s.has("required")) {
                out.add("object");
            }
            if (s.has("items") || s.has("prefixItems") || s.has("minItems") || s.has("maxItems")) {
                out.add("array");
            }
            if (s.has("minLength") || s.has("maxLength") || s.has("format") || s.has("pattern")) {
                out.add("string");
            }
        } else if (t.isArray()) {
            t.forEach(x -> out.add(x.textValue()));
        } else {
            out.add(t.textValue());
        }
        return out;
    }

    private String string(int min, int max) {
        int len = min + rnd.nextInt(Math.min(max, min + 8) - min + 1);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < len; i++) {
            sb.append(rnd.nextInt(3) == 0 ? CHARS[rnd.nextInt(CHARS.length)] : String.valueOf((char) ('a' + rnd.nextInt(26))));
        }
        return sb.toString();
    }

    /** Letters from {@code from}, {@code min} to {@code max} of them. */
    private String letters(String from, int min, int max) {
        StringBuilder sb = new StringBuilder();
        int n = min + rnd.nextInt(max - min + 1);
        int[] cps = from.codePoints().toArray();
        for (int i = 0; i < n; i++) {
            sb.appendCodePoint(cps[rnd.nextInt(cps.length)]);
        }
        return sb.toString();
    }

    /** A string of one of the corpus's patterns, written by hand (not from the matcher's automaton). */
    private String patterned(String pattern, int maxLength) {
        String lower = "abcdefghijklmnopqrstuvwxyz";
        String out = switch (pattern) {
            case "^[A-Z]{2}-\\d{3}$" -> letters(lower.toUpperCase(java.util.Locale.ROOT), 2, 2) + "-" + letters("0123456789", 3, 3);
            case "^(red|green|blue)$" -> List.of("red", "green", "blue").get(rnd.nextInt(3));
            case "^[a-z0-9._-]+@[a-z]+\\.[a-z]{2,3}$" -> letters(lower + "0123456789._-", 1, 6) + "@" + letters(lower, 1, 5) + "."
                    + letters(lower, 2, 3);
            case "^#[a-zé]+$" -> "#" + letters(lower + "é", 1, 6);
            case "^[a-z]+$" -> letters(lower, 1, 3);
            default -> throw new IllegalArgumentException(pattern);
        };
        return out.codePointCount(0, out.length()) <= maxLength ? out : patterned(pattern, maxLength);
    }

    private static final String LOWER = "abcdefghijklmnopqrstuvwxyz";

    /** A string of a format, from java.time's calendar and hand-written shapes (not the matcher's). */
    private String formatted(String format) {
        return switch (format) {
            case "date" -> date();
            case "time" -> time();
            case "date-time" -> date() + "T" + time();
            case "uuid" -> {
                StringBuilder u = new StringBuilder(new java.util.UUID(rnd.nextLong(), rnd.nextLong()).toString());
                for (int i = 0; i < u.length(); i++) {
                    u.setCharAt(i, rnd.nextBoolean() ? Character.toUpperCase(u.charAt(i)) : u.charAt(i));
                }
                yield u.toString();
            }
            case "email" -> letters(LOWER + "0123456789_+", 1, 8) + (rnd.nextBoolean() ? "." + letters(LOWER, 1, 4) : "") + "@"
                    + letters(LOWER, 1, 6) + "." + List.of("com", "org", "de", "io").get(rnd.nextInt(4));
            case "hostname" -> letters(LOWER, 1, 4) + (rnd.nextBoolean() ? "-" + letters(LOWER + "0123456789", 1, 2) : "") + "."
                    + letters(LOWER, 2, 3);
            case "ipv4" -> rnd.nextInt(256) + "." + rnd.nextInt(256) + "." + rnd.nextInt(256) + "." + rnd.nextInt(256);
            case "uri" -> (rnd.nextBoolean() ? "https" : "http") + "://" + letters(LOWER, 1, 8) + "." + letters(LOWER, 2, 3)
                    + (rnd.nextBoolean() ? ":" + (1 + rnd.nextInt(9999)) : "") + "/" + letters(LOWER + "0123456789-_.~", 0, 10)
                    + (rnd.nextBoolean() ? "?q=" + letters(LOWER + "0123456789", 1, 5) + "&x=%2F" : "")
                    + (rnd.nextBoolean() ? "#" + letters(LOWER, 1, 4) : "");
            default -> throw new IllegalArgumentException(format);
        };
    }

    private String date() {
        int year = rnd.nextInt(4) == 0 ? new int[] {0, 1, 1900, 2000, 2024, 9999}[rnd.nextInt(6)] : rnd.nextInt(10_000);
        java.time.YearMonth ym = java.time.YearMonth.of(year, 1 + rnd.nextInt(12));
        int day = rnd.nextBoolean() ? ym.lengthOfMonth() : 1 + rnd.nextInt(ym.lengthOfMonth());
        return String.format("%04d-%02d-%02d", year, ym.getMonthValue(), day);
    }

    private String time() {
        StringBuilder t = new StringBuilder(String.format("%02d:%02d:%02d", rnd.nextInt(24), rnd.nextInt(60), rnd.nextInt(60)));
        if (rnd.nextBoolean()) {
            t.append('.');
            for (int i = 1 + rnd.nextInt(9); i > 0; i--) {
                t.append((char) ('0' + rnd.nextInt(10)));
            }
        }
        if (rnd.nextBoolean()) {
            t.append('Z');
        } else {
            // java.time's offsets, the validator's: within 18:00
            int minutes = rnd.nextInt(18 * 60 + 1);
            t.append(rnd.nextBoolean() ? '+' : '-').append(String.format("%02d:%02d", minutes / 60, minutes % 60));
        }
        return t.toString();
    }

    /** An integer within the schema's bounds, often at them. */
    private JsonNode boundedInteger(JsonNode s) {
        long lo = Long.MIN_VALUE / 2;
        long hi = Long.MAX_VALUE / 2;
        if (s.has("minimum")) {
            lo = Math.max(lo, (long) Math.ceil(s.get("minimum").doubleValue()));
        }
        if (s.has("exclusiveMinimum")) {
            lo = Math.max(lo, (long) Math.floor(s.get("exclusiveMinimum").doubleValue()) + 1);
        }
        if (s.has("maximum")) {
            hi = Math.min(hi, (long) Math.floor(s.get("maximum").doubleValue()));
        }
        if (s.has("exclusiveMaximum")) {
            hi = Math.min(hi, (long) Math.ceil(s.get("exclusiveMaximum").doubleValue()) - 1);
        }
        long span = hi - lo;
        return F.numberNode(switch (rnd.nextInt(4)) {
            case 0 -> lo;
            case 1 -> hi;
            case 2 -> lo + Math.floorMod(rnd.nextLong(), Math.min(span, 1000) + 1);
            default -> lo + Math.floorMod(rnd.nextLong(), span + 1);
        });
    }

    private JsonNode integer() {
        return switch (rnd.nextInt(4)) {
            case 0 -> F.numberNode(rnd.nextInt(10));
            case 1 -> F.numberNode(rnd.nextInt());
            case 2 -> F.numberNode(rnd.nextLong());
            default -> F.numberNode(-rnd.nextInt(1000));
        };
    }

    private JsonNode number() {
        return switch (rnd.nextInt(4)) {
            case 0 -> integer();
            case 1 -> F.numberNode(rnd.nextDouble() * 100 - 50);
            case 2 -> F.numberNode(rnd.nextGaussian() * Math.pow(10, rnd.nextInt(40) - 20));
            default -> F.numberNode(rnd.nextInt(100) / 4.0);
        };
    }

    private JsonNode any(int depth) {
        int kinds = depth > MAX_DEPTH ? 4 : 6;
        return switch (rnd.nextInt(kinds)) {
            case 0 -> F.textNode(string(0, 6));
            case 1 -> number();
            case 2 -> F.booleanNode(rnd.nextBoolean());
            case 3 -> F.nullNode();
            case 4 -> {
                ObjectNode o = F.objectNode();
                for (int i = rnd.nextInt(3); i > 0; i--) {
                    o.set(string(0, 4), any(depth + 1));
                }
                yield o;
            }
            default -> {
                ArrayNode a = F.arrayNode();
                for (int i = rnd.nextInt(3); i > 0; i--) {
                    a.add(any(depth + 1));
                }
                yield a;
            }
        };
    }

    private JsonNode object(JsonNode s, int depth) {
        ObjectNode o = F.objectNode();
        Set<String> required = new java.util.HashSet<>();
        s.path("required").forEach(r -> required.add(r.textValue()));
        JsonNode props = s.path("properties");
        boolean shallow = depth > MAX_DEPTH;
        for (Map.Entry<String, JsonNode> e : props.properties()) {
            if (required.contains(e.getKey()) || (!shallow && rnd.nextBoolean())) {
                o.set(e.getKey(), gen(e.getValue(), depth + 1));
            }
        }
        JsonNode ap = s.get("additionalProperties");
        JsonNode extra = ap == null ? (s.has("properties") ? null : F.booleanNode(true)) : ap;
        if (extra != null && !(extra.isBoolean() && !extra.booleanValue()) && !shallow) {
            for (int i = rnd.nextInt(3); i > 0; i--) {
                String key = string(0, 5);
                if (!props.has(key) && !o.has(key) && (props.isEmpty() || plain(key))) {
                    o.set(key, gen(extra, depth + 1));
                }
            }
        }
        return o;
    }

    /** Whether Jackson writes the key without escapes: free keys beside declared ones take none. */
    private static boolean plain(String key) {
        return key.chars().allMatch(c -> c >= 0x20 && c != '"' && c != '\\');
    }

    private JsonNode array(JsonNode s, int depth) {
        ArrayNode a = F.arrayNode();
        int min = s.path("minItems").asInt(0);
        int max = s.path("maxItems").asInt(Integer.MAX_VALUE);
        JsonNode prefix = s.path("prefixItems");
        JsonNode items = s.has("items") ? s.get("items") : F.booleanNode(true);
        int cap = items.isBoolean() && !items.booleanValue() ? Math.min(max, prefix.size()) : max;
        int n = depth > MAX_DEPTH ? min : min + rnd.nextInt(Math.min(cap, min + 3) - min + 1);
        for (int i = 0; i < n; i++) {
            a.add(gen(i < prefix.size() ? prefix.get(i) : items, depth + 1));
        }
        return a;
    }
}
