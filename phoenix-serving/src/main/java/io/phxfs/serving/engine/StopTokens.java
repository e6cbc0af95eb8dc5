package io.phxfs.serving.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.text.HfTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The model's end-of-sequence ids, as transformers' generate takes them: generation_config.json's
 * {@code eos_token_id} (a number or a list), else config.json's, else the tokenizer's eos_token.
 */
final class StopTokens {
    private StopTokens() {
    }

    static Set<Integer> of(Path dir, HfTokenizer tokenizer) throws IOException {
        for (String name : new String[] {"generation_config.json", "config.json"}) {
            Path f = dir.resolve(name);
            if (!Files.isRegularFile(f)) {
                continue;
            }
            JsonNode root;
            try {
                root = new ObjectMapper().readTree(f.toFile());
            } catch (IOException e) {
                throw new IllegalArgumentException(f + ": not valid JSON: " + e.getMessage(), e);
            }
            JsonNode eos = root.path("eos_token_id");
            Set<Integer> ids = new LinkedHashSet<>();
            if (eos.isIntegralNumber()) {
                ids.add(eos.intValue());
            } else if (eos.isArray()) {
                for (JsonNode n : eos) {
                    if (!n.isIntegralNumber()) {
                        throw new IllegalArgumentException(f + ": \"eos_token_id\" holds " + n + ", not a token id");
                    }
                    ids.add(n.intValue());
                }
            } else if (!eos.isMissingNode() && !eos.isNull()) {
                throw new IllegalArgumentException(f + ": \"eos_token_id\" is " + eos + ", not a token id or a list of them");
            }
            if (!ids.isEmpty()) {
                return Set.copyOf(ids);
            }
        }
        return tokenizer.eosToken().flatMap(t -> {
            java.util.OptionalInt id = tokenizer.tokenId(t);
            return id.isPresent() ? java.util.Optional.of(Set.of(id.getAsInt())) : java.util.Optional.empty();
        }).orElse(Set.of());
    }
}
