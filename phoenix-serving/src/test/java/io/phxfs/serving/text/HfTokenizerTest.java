package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** HfTokenizer against what transformers 5.17 recorded in the fixtures' reference.json. */
class HfTokenizerTest {
    @ParameterizedTest
    @ValueSource(strings = {TestFixtures.LLAMA, TestFixtures.GPT2})
    void encodesAndDecodesEveryReferenceText(String model) throws IOException {
        JsonNode ref = TestFixtures.reference(model);
        try (HfTokenizer tokenizer = HfTokenizer.open(TestFixtures.model(model))) {
            for (JsonNode c : ref.get("texts")) {
                String text = c.get("text").asText();
                int[] ids = TestFixtures.ints(c.get("ids"));
                assertArrayEquals(ids, tokenizer.encode(text, true), text);
                assertArrayEquals(TestFixtures.ints(c.get("ids_no_special")), tokenizer.encode(text, false), text);
                assertEquals(c.get("decode").asText(), tokenizer.decode(ids, false), text);
                assertEquals(c.get("decode_skip_special").asText(), tokenizer.decode(ids, true), text);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {TestFixtures.LLAMA, TestFixtures.GPT2})
    void reproducesPromptIdsAndGeneratedText(String model) throws IOException {
        JsonNode ref = TestFixtures.reference(model);
        int checked = 0;
        try (HfTokenizer tokenizer = HfTokenizer.open(TestFixtures.model(model))) {
            for (JsonNode c : ref.get("chats")) {
                if (!c.has("text")) {
                    continue;
                }
                assertArrayEquals(TestFixtures.ints(c.get("ids")), tokenizer.encode(c.get("text").asText(), false));
                checkGenerated(tokenizer, c);
                checked++;
            }
            for (JsonNode c : ref.get("completions")) {
                assertArrayEquals(TestFixtures.ints(c.get("ids")), tokenizer.encode(c.get("prompt").asText(), true));
                checkGenerated(tokenizer, c);
                checked++;
            }
        }
        assertTrue(checked >= 9, "reference cases checked: " + checked);
    }

    private static void checkGenerated(HfTokenizer tokenizer, JsonNode c) {
        int[] generated = TestFixtures.ints(c.get("generated"));
        assertEquals(c.get("generated_text").asText(), tokenizer.decode(generated, true));
        assertEquals(c.get("generated_text_with_special").asText(), tokenizer.decode(generated, false));
    }

    @Test
    void llamaSpecialTokens() throws IOException {
        try (HfTokenizer t = HfTokenizer.open(TestFixtures.model(TestFixtures.LLAMA))) {
            assertEquals(Optional.of("<|begin_of_text|>"), t.bosToken());
            assertEquals(Optional.of("<|eot_id|>"), t.eosToken());
            assertEquals(Map.of("bos_token", "<|begin_of_text|>", "eos_token", "<|eot_id|>"), t.specialTokens());
            assertEquals(OptionalInt.of(4), t.tokenId("<|eot_id|>"));
            assertEquals(OptionalInt.of(1), t.tokenId("<|end_of_text|>"));
            assertEquals(OptionalInt.empty(), t.tokenId("<|no such token|>"));
            assertTrue(t.isSpecial(0) && t.isSpecial(4));
            assertFalse(t.isSpecial(5));
            assertFalse(t.isSpecial(-1));
            assertEquals(1024, t.vocabSize());
        }
    }

    @Test
    void gpt2SpecialTokens() throws IOException {
        try (HfTokenizer t = HfTokenizer.open(TestFixtures.model(TestFixtures.GPT2))) {
            assertEquals(Map.of("bos_token", "<s>", "eos_token", "</s>", "unk_token", "<unk>"), t.specialTokens());
            assertEquals(OptionalInt.of(2), t.tokenId("</s>"));
            assertTrue(t.tokenId("<0xE4>").isPresent());
            assertEquals(956, t.vocabSize());
            assertEquals(config(TestFixtures.GPT2).get("vocab_size").asInt(), t.vocabSize());
        }
    }

    private static JsonNode config(String model) throws IOException {
        return new ObjectMapper().readTree(TestFixtures.model(model).resolve("config.json").toFile());
    }

    @Test
    void missingTokenizerJsonNamesThePathAndTheReason(@TempDir Path dir) {
        IOException e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains(dir.resolve("tokenizer.json").toString()), e.getMessage());
        assertTrue(e.getMessage().contains("No such file or directory"), e.getMessage());
    }

    @Test
    void malformedConfigNamesTheFileAndTheField(@TempDir Path dir) throws IOException {
        copyTokenizer(TestFixtures.GPT2, dir);
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"bos_token\": 3, \"eos_token\": \"</s>\"}");
        IOException e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains("tokenizer_config.json"), e.getMessage());
        assertTrue(e.getMessage().contains("\"bos_token\""), e.getMessage());

        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"eos_token\": {\"lstrip\": false}}");
        e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains("\"eos_token\"") && e.getMessage().contains("content"), e.getMessage());

        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"clean_up_tokenization_spaces\": \"yes\"}");
        e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains("clean_up_tokenization_spaces"), e.getMessage());

        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"bos_token\": \"<s>\",");
        e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains("tokenizer_config.json") && e.getMessage().contains("not valid JSON"),
                e.getMessage());
    }

    @Test
    void malformedTokenizerJsonNamesTheFile(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": 7}}");
        IOException e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains("tokenizer.json") && e.getMessage().contains("model.vocab"), e.getMessage());
    }

    /**
     * tokenizers 0.21's Strip decoder with stop > 0 panics ("index out of bounds: the len is 0
     * but the index is 18446744073709551615", strip.rs:47) on the decoder chain of this very
     * tokenizer, and the panic crossing JNI aborted the JVM (exit 134) on the first decode: such
     * a tokenizer.json is refused when opened, naming the field, before the native library sees it.
     */
    @Test
    void aDecoderThatAbortsTheNativeLibraryIsRefused(@TempDir Path dir) throws IOException {
        ObjectMapper json = new ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode spec = (com.fasterxml.jackson.databind.node.ObjectNode) json
                .readTree(TestFixtures.model(TestFixtures.GPT2).resolve("tokenizer.json").toFile());
        spec.set("decoder", json.readTree("{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\":"
                + " {\"String\": \"\u2581\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"},"
                + " {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 1}]}"));
        Files.writeString(dir.resolve("tokenizer.json"), json.writeValueAsString(spec));
        IOException e = assertThrows(IOException.class, () -> HfTokenizer.open(dir));
        assertTrue(e.getMessage().contains("tokenizer.json") && e.getMessage().contains("decoder.decoders[3]")
                && e.getMessage().contains("Strip"), e.getMessage());
    }

    @Test
    void addedTokenObjectsAndSpecialTokensMap(@TempDir Path dir) throws IOException {
        copyTokenizer(TestFixtures.GPT2, dir);
        Files.writeString(dir.resolve("tokenizer_config.json"),
                "{\"bos_token\": {\"__type\": \"AddedToken\", \"content\": \"<s>\", \"lstrip\": false}, \"eos_token\": \"<s>\","
                        + " \"pad_token\": null}");
        Files.writeString(dir.resolve("special_tokens_map.json"), "{\"eos_token\": {\"content\": \"</s>\"}, \"pad_token\": \"<unk>\"}");
        try (HfTokenizer t = HfTokenizer.open(dir)) {
            assertEquals(Optional.of("<s>"), t.bosToken());
            assertEquals(Optional.of("</s>"), t.eosToken());
            assertEquals("<unk>", t.specialTokens().get("pad_token"));
            assertEquals(java.util.List.of("bos_token", "eos_token", "pad_token"), java.util.List.copyOf(t.specialTokens().keySet()));
        }
    }

    @Test
    void aNamedSpecialTokenMissingFromTokenizerJsonBecomesSpecial(@TempDir Path dir) throws IOException {
        copyTokenizer(TestFixtures.GPT2, dir);
        // "▁is▁" is an ordinary vocabulary entry; naming it in the config makes it special, as transformers does
        String token = "\u2581is\u2581";
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"pad_token\": \"" + token + "\"}");
        try (HfTokenizer plain = HfTokenizer.open(TestFixtures.model(TestFixtures.GPT2));
             HfTokenizer t = HfTokenizer.open(dir)) {
            int id = plain.tokenId(token).orElseThrow();
            assertFalse(plain.isSpecial(id));
            assertTrue(t.isSpecial(id));
            assertEquals(plain.vocabSize(), t.vocabSize());
            assertEquals("is ", plain.decode(new int[] {id}, true));
            assertEquals("", t.decode(new int[] {id}, true));
            assertEquals("is ", t.decode(new int[] {id}, false));
        }
    }

    @Test
    void cleanUpTokenizationSpaces(@TempDir Path dir) throws IOException {
        copyTokenizer(TestFixtures.GPT2, dir);
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"clean_up_tokenization_spaces\": true}");
        try (HfTokenizer plain = HfTokenizer.open(TestFixtures.model(TestFixtures.GPT2));
             HfTokenizer t = HfTokenizer.open(dir)) {
            String text = "Hello , world ! It is n't it ? I 'm sure they 're here .";
            int[] ids = plain.encode(text, false);
            assertEquals(text, plain.decode(ids, true));
            assertEquals("Hello, world! It isn't it? I'm sure they're here.", t.decode(ids, true));
        }
    }

    @Test
    void closeIsIdempotentAndLaterUseFails() throws IOException {
        HfTokenizer t = HfTokenizer.open(TestFixtures.model(TestFixtures.LLAMA));
        t.close();
        t.close();
        assertThrows(IllegalStateException.class, () -> t.encode("x", true));
        assertThrows(IllegalStateException.class, () -> t.decode(new int[] {5}, true));
    }

    @Test
    void unknownIdsDecodeToNothing() throws IOException {
        try (HfTokenizer t = HfTokenizer.open(TestFixtures.model(TestFixtures.LLAMA))) {
            int[] ids = t.encode("Hello", false);
            int[] withUnknown = java.util.Arrays.copyOf(ids, ids.length + 1);
            withUnknown[ids.length] = 1_000_000;
            assertEquals(t.decode(ids, false), t.decode(withUnknown, false));
        }
    }

    static void copyTokenizer(String model, Path dir) throws IOException {
        Files.copy(TestFixtures.model(model).resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    }
}
