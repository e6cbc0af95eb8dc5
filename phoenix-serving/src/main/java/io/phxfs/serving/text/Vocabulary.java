package io.phxfs.serving.text;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The token strings of tokenizer.json (the model's vocabulary plus its added tokens) and what its
 * decoder does, which the native tokenizer does not expose: token lookups, which ids are special,
 * and the facts incremental decoding needs (byte-fallback tokens, decoders that are not local).
 */
final class Vocabulary {
    private final Map<String, Integer> modelIds;
    private final Map<String, Integer> addedIds;
    private final String[] tokens;
    private final BitSet special;
    private final BitSet byteTokens;
    private final int size;
    private final DecoderTraits decoder;

    private Vocabulary(Map<String, Integer> modelIds, Map<String, Integer> addedIds, String[] tokens, BitSet special,
            BitSet byteTokens, DecoderTraits decoder) {
        this.modelIds = modelIds;
        this.addedIds = addedIds;
        this.tokens = tokens;
        this.special = special;
        this.byteTokens = byteTokens;
        this.decoder = decoder;
        Set<String> all = new HashSet<>(modelIds.keySet());
        all.addAll(addedIds.keySet());
        this.size = all.size();
    }

    /**
     * Reads tokenizer.json's vocabulary after registering, as transformers does when it loads a
     * tokenizer, the special tokens that tokenizer_config.json names but tokenizer.json does not
     * list among its added tokens ({@code spec} is changed in place so that the native tokenizer
     * sees them too).
     */
    static Vocabulary of(JsonFile file, ObjectNode spec, TokenizerConfig config) throws IOException {
        Map<String, Integer> modelIds = modelVocabulary(file, spec.get("model"));
        ArrayNode added = addedTokens(file, spec);
        register(added, modelIds, config);
        Map<String, Integer> addedIds = new HashMap<>();
        BitSet special = new BitSet();
        for (int i = 0; i < added.size(); i++) {
            JsonNode t = added.get(i);
            JsonNode id = t.get("id");
            JsonNode content = t.get("content");
            if (id == null || !id.canConvertToInt() || id.intValue() < 0 || content == null || !content.isTextual()) {
                throw file.fieldError("added_tokens[" + i + "]", "needs an integer \"id\" and a string \"content\"");
            }
            addedIds.put(content.asText(), id.intValue());
            if (t.path("special").asBoolean(false)) {
                special.set(id.intValue());
            }
        }
        int maxId = -1;
        for (int id : modelIds.values()) {
            maxId = Math.max(maxId, id);
        }
        for (int id : addedIds.values()) {
            maxId = Math.max(maxId, id);
        }
        String[] tokens = new String[maxId + 1];
        modelIds.forEach((token, id) -> tokens[id] = token);
        addedIds.forEach((token, id) -> tokens[id] = token);
        DecoderTraits decoder = DecoderTraits.of(spec.get("decoder"));
        BitSet byteTokens = new BitSet();
        if (decoder.byteFallback()) {
            for (int id = 0; id < tokens.length; id++) {
                if (tokens[id] != null && isByteToken(tokens[id])) {
                    byteTokens.set(id);
                }
            }
        }
        return new Vocabulary(modelIds, addedIds, tokens, special, byteTokens, decoder);
    }

    /** As the native tokenizer's token_to_id: added tokens first, then the model's vocabulary. */
    OptionalInt id(String token) {
        Integer id = addedIds.get(token);
        if (id == null) {
            id = modelIds.get(token);
        }
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /** The token string of {@code id}, or null for an id the tokenizer does not know (decode drops those). */
    String token(int id) {
        return id >= 0 && id < tokens.length ? tokens[id] : null;
    }

    /** The vocabulary with added tokens, counted as transformers' {@code len(tokenizer)} does: distinct token strings. */
    int size() {
        return size;
    }

    /** The largest id with a token. */
    int maxId() {
        return tokens.length - 1;
    }

    /** Whether {@code id} is an added token (tokenizer.json's {@code added_tokens}), whose text is its content. */
    boolean isAdded(int id) {
        return id >= 0 && id < tokens.length && tokens[id] != null && Integer.valueOf(id).equals(addedIds.get(tokens[id]));
    }

    boolean isSpecial(int id) {
        return id >= 0 && special.get(id);
    }

    /** A {@code <0xAB>} token that a ByteFallback decoder merges with its neighbours. */
    boolean isByteToken(int id) {
        return id >= 0 && byteTokens.get(id);
    }

    DecoderTraits decoder() {
        return decoder;
    }

    private static boolean isByteToken(String token) {
        return token.length() == 6 && token.startsWith("<0x") && token.endsWith(">")
                && Character.digit(token.charAt(3), 16) >= 0 && Character.digit(token.charAt(4), 16) >= 0;
    }

    private static Map<String, Integer> modelVocabulary(JsonFile file, JsonNode model) throws IOException {
        if (model == null || !model.isObject()) {
            throw file.fieldError("model", "missing or not an object");
        }
        JsonNode vocab = model.get("vocab");
        Map<String, Integer> ids = new HashMap<>();
        if (vocab == null || vocab.isNull()) {
            return ids;
        }
        if (vocab.isObject()) {
            for (Map.Entry<String, JsonNode> e : vocab.properties()) {
                if (!e.getValue().canConvertToInt() || e.getValue().intValue() < 0) {
                    throw file.fieldError("model.vocab", "the id of " + e.getKey() + " is not a token id");
                }
                ids.put(e.getKey(), e.getValue().intValue());
            }
        } else if (vocab.isArray()) {
            // Unigram: [piece, score] pairs, the id being the position
            for (int i = 0; i < vocab.size(); i++) {
                JsonNode entry = vocab.get(i);
                if (!entry.isArray() || entry.isEmpty() || !entry.get(0).isTextual()) {
                    throw file.fieldError("model.vocab[" + i + "]", "expected [piece, score]");
                }
                ids.putIfAbsent(entry.get(0).asText(), i);
            }
        } else {
            throw file.fieldError("model.vocab", "expected an object or a list, got " + JsonFile.describe(vocab));
        }
        return ids;
    }

    private static ArrayNode addedTokens(JsonFile file, ObjectNode spec) throws IOException {
        JsonNode added = spec.get("added_tokens");
        if (added == null || added.isNull()) {
            return spec.putArray("added_tokens");
        }
        if (!added.isArray()) {
            throw file.fieldError("added_tokens", "expected a list, got " + JsonFile.describe(added));
        }
        return (ArrayNode) added;
    }

    private static void register(ArrayNode added, Map<String, Integer> modelIds, TokenizerConfig config) {
        Set<String> present = new HashSet<>();
        Set<Integer> usedIds = new HashSet<>(modelIds.values());
        for (JsonNode t : added) {
            present.add(t.path("content").asText());
            usedIds.add(t.path("id").asInt());
        }
        for (TokenizerConfig.DeclaredToken t : config.declaredTokens()) {
            if (present.add(t.content())) {
                added.add(addedToken(t.id(), t.content(), t.special()));
                usedIds.add(t.id());
            }
        }
        int next = usedIds.stream().mapToInt(Integer::intValue).max().orElse(-1) + 1;
        for (String content : config.specialContents()) {
            if (present.add(content)) {
                Integer id = modelIds.get(content);
                added.add(addedToken(id != null ? id : next++, content, true));
            }
        }
    }

    private static ObjectNode addedToken(int id, String content, boolean special) {
        ObjectNode t = JsonFile.MAPPER.createObjectNode();
        t.put("id", id);
        t.put("content", content);
        t.put("single_word", false);
        t.put("lstrip", false);
        t.put("rstrip", false);
        t.put("normalized", !special);
        t.put("special", special);
        return t;
    }

    @Override
    public String toString() {
        return "Vocabulary[" + size + " tokens, specials " + Arrays.toString(special.stream().toArray()) + "]";
    }
}
