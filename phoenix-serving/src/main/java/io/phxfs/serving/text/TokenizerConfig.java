package io.phxfs.serving.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What transformers takes from tokenizer_config.json and special_tokens_map.json besides the
 * tokenizer itself: the named special tokens (the chat template's variables), the added tokens
 * declared there, and whether decode cleans up spaces before punctuation.
 */
final class TokenizerConfig {
    static final String FILE = "tokenizer_config.json";
    static final String SPECIAL_TOKENS_MAP = "special_tokens_map.json";

    /** The special tokens the chat template sees, in transformers' order. */
    static final List<String> TEMPLATE_TOKENS = List.of("bos_token", "eos_token", "unk_token", "pad_token");
    /** Named special tokens that are not template variables but that transformers registers all the same. */
    private static final List<String> OTHER_NAMED_TOKENS = List.of("sep_token", "cls_token", "mask_token");
    private static final List<String> TOKEN_LISTS = List.of("additional_special_tokens", "extra_special_tokens");

    /** An added token declared in tokenizer_config.json's added_tokens_decoder. */
    record DeclaredToken(int id, String content, boolean special) {
    }

    private final Map<String, String> templateTokens;
    private final List<String> specialContents;
    private final List<DeclaredToken> declaredTokens;
    private final boolean cleanUpSpaces;
    private final Optional<JsonFile> file;

    private TokenizerConfig(Map<String, String> templateTokens, List<String> specialContents,
            List<DeclaredToken> declaredTokens, boolean cleanUpSpaces, Optional<JsonFile> file) {
        this.templateTokens = Collections.unmodifiableMap(templateTokens);
        this.specialContents = List.copyOf(specialContents);
        this.declaredTokens = List.copyOf(declaredTokens);
        this.cleanUpSpaces = cleanUpSpaces;
        this.file = file;
    }

    /**
     * Reads both files of {@code modelDir}; either may be absent. special_tokens_map.json wins
     * over tokenizer_config.json for a token both name, as in transformers' loading.
     */
    static TokenizerConfig read(Path modelDir) throws IOException {
        Optional<JsonFile> config = JsonFile.readIfPresent(modelDir.resolve(FILE));
        Optional<JsonFile> map = JsonFile.readIfPresent(modelDir.resolve(SPECIAL_TOKENS_MAP));
        Map<String, String> named = new LinkedHashMap<>();
        List<String> specials = new ArrayList<>();
        for (Optional<JsonFile> source : List.of(config, map)) {
            if (source.isEmpty()) {
                continue;
            }
            for (String field : TEMPLATE_TOKENS) {
                tokenField(source.get(), field).ifPresent(t -> named.put(field, t));
            }
            for (String field : OTHER_NAMED_TOKENS) {
                tokenField(source.get(), field).ifPresent(specials::add);
            }
            for (String field : TOKEN_LISTS) {
                specials.addAll(tokenList(source.get(), field));
            }
        }
        Map<String, String> ordered = new LinkedHashMap<>();
        for (String field : TEMPLATE_TOKENS) {
            if (named.containsKey(field)) {
                ordered.put(field, named.get(field));
            }
        }
        specials.addAll(0, ordered.values());
        List<DeclaredToken> declared = config.isPresent() ? declaredTokens(config.get()) : List.of();
        boolean cleanUp = config.isPresent() && cleanUpFlag(config.get());
        return new TokenizerConfig(ordered, specials, declared, cleanUp, config);
    }

    /** bos_token, eos_token, unk_token and pad_token, those defined, as the template sees them. */
    Map<String, String> templateTokens() {
        return templateTokens;
    }

    /** Every named special token's text (template tokens first), duplicates possible. */
    List<String> specialContents() {
        return specialContents;
    }

    List<DeclaredToken> declaredTokens() {
        return declaredTokens;
    }

    boolean cleanUpSpaces() {
        return cleanUpSpaces;
    }

    /** tokenizer_config.json itself, for the chat template stored in it. */
    Optional<JsonFile> file() {
        return file;
    }

    /** A token given as a string or as an AddedToken object; null means "none". */
    private static Optional<String> tokenField(JsonFile file, String field) throws IOException {
        JsonNode node = file.root().get(field);
        if (node == null || node.isNull()) {
            return Optional.empty();
        }
        return Optional.of(tokenText(file, field, node));
    }

    private static String tokenText(JsonFile file, String field, JsonNode node) throws IOException {
        if (node.isTextual()) {
            return node.asText();
        }
        if (node.isObject()) {
            JsonNode content = node.get("content");
            if (content != null && content.isTextual()) {
                return content.asText();
            }
            throw file.fieldError(field, "an AddedToken object needs a string \"content\", got "
                    + (content == null ? "none" : JsonFile.describe(content)));
        }
        throw file.fieldError(field, "expected a string or an object with \"content\", got " + JsonFile.describe(node));
    }

    private static List<String> tokenList(JsonFile file, String field) throws IOException {
        JsonNode node = file.root().get(field);
        if (node == null || node.isNull()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        if (node.isArray()) {
            for (int i = 0; i < node.size(); i++) {
                out.add(tokenText(file, field + "[" + i + "]", node.get(i)));
            }
        } else if (node.isObject()) {
            // transformers 5 writes extra_special_tokens as a name -> token object
            for (Map.Entry<String, JsonNode> e : node.properties()) {
                out.add(tokenText(file, field + "." + e.getKey(), e.getValue()));
            }
        } else {
            throw file.fieldError(field, "expected a list of tokens, got " + JsonFile.describe(node));
        }
        return out;
    }

    private static List<DeclaredToken> declaredTokens(JsonFile file) throws IOException {
        JsonNode node = file.root().get("added_tokens_decoder");
        if (node == null || node.isNull()) {
            return List.of();
        }
        if (!node.isObject()) {
            throw file.fieldError("added_tokens_decoder", "expected an object of id -> token, got " + JsonFile.describe(node));
        }
        List<DeclaredToken> out = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            String field = "added_tokens_decoder." + e.getKey();
            int id;
            try {
                id = Integer.parseInt(e.getKey());
            } catch (NumberFormatException ex) {
                throw file.fieldError(field, "the key is not a token id");
            }
            if (id < 0) {
                throw file.fieldError(field, "the key is not a token id");
            }
            String content = tokenText(file, field, e.getValue());
            JsonNode special = e.getValue().get("special");
            out.add(new DeclaredToken(id, content, special != null && special.asBoolean(false)));
        }
        return out;
    }

    private static boolean cleanUpFlag(JsonFile file) throws IOException {
        JsonNode node = file.root().get("clean_up_tokenization_spaces");
        if (node == null || node.isNull()) {
            return false;
        }
        if (!node.isBoolean()) {
            throw file.fieldError("clean_up_tokenization_spaces", "expected true or false, got " + JsonFile.describe(node));
        }
        return node.booleanValue();
    }
}
