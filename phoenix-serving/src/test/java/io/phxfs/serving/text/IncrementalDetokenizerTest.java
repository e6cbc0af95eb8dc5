package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Streaming decode: the pieces add up to decode(generated ids) exactly, for every generation
 * transformers recorded in the fixtures and for random id sequences (many of them byte tokens
 * and split characters), and no piece holds a U+FFFD the full text does not have there.
 */
class IncrementalDetokenizerTest {
    private static HfTokenizer llama;
    private static HfTokenizer gpt2;
    private static HfTokenizer gpt2Cleanup;

    private static synchronized HfTokenizer tokenizer(String which) {
        try {
            switch (which) {
                case "llama" -> {
                    if (llama == null) {
                        llama = HfTokenizer.open(TestFixtures.model(TestFixtures.LLAMA));
                    }
                    return llama;
                }
                case "gpt2" -> {
                    if (gpt2 == null) {
                        gpt2 = HfTokenizer.open(TestFixtures.model(TestFixtures.GPT2));
                    }
                    return gpt2;
                }
                default -> {
                    if (gpt2Cleanup == null) {
                        Path dir = Files.createTempDirectory("phx-cleanup-tokenizer");
                        Files.copy(TestFixtures.model(TestFixtures.GPT2).resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
                        Files.writeString(dir.resolve("tokenizer_config.json"),
                                "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"clean_up_tokenization_spaces\": true}");
                        gpt2Cleanup = HfTokenizer.open(dir);
                    }
                    return gpt2Cleanup;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @AfterContainer
    static synchronized void closeTokenizers() {
        for (HfTokenizer t : new HfTokenizer[] {llama, gpt2, gpt2Cleanup}) {
            if (t != null) {
                t.close();
            }
        }
        llama = gpt2 = gpt2Cleanup = null;
    }

    /** Streams {@code ids} and checks every piece against the full decode. */
    static String stream(HfTokenizer tokenizer, int[] prompt, int[] ids, boolean skip) {
        IncrementalDetokenizer d = new IncrementalDetokenizer(tokenizer, prompt, skip);
        String full = tokenizer.decode(ids, skip);
        List<String> pieces = new ArrayList<>();
        for (int id : ids) {
            pieces.add(d.add(id));
        }
        pieces.add(d.flush());
        StringBuilder text = new StringBuilder();
        for (String piece : pieces) {
            if (!piece.isEmpty()) {
                assertFalse(Character.isHighSurrogate(piece.charAt(piece.length() - 1)), "piece ends inside a character");
                assertFalse(Character.isLowSurrogate(piece.charAt(0)), "piece starts inside a character");
            }
            for (int i = 0; i < piece.length(); i++) {
                int at = text.length() + i;
                if (piece.charAt(i) == '\uFFFD') {
                    assertTrue(at < full.length() && full.charAt(at) == '\uFFFD',
                            "U+FFFD at " + at + " that the full text does not have: " + full);
                }
            }
            text.append(piece);
        }
        assertEquals(full, text.toString());
        assertEquals(full, d.text());
        return text.toString();
    }

    @ParameterizedTest
    @ValueSource(strings = {TestFixtures.LLAMA, TestFixtures.GPT2})
    void streamsEveryReferenceGeneration(String model) {
        HfTokenizer tokenizer = tokenizer(model.equals(TestFixtures.LLAMA) ? "llama" : "gpt2");
        JsonNode ref = TestFixtures.reference(model);
        int sequences = 0;
        for (String section : new String[] {"chats", "completions"}) {
            for (JsonNode c : ref.get(section)) {
                if (!c.has("generated")) {
                    continue;
                }
                int[] prompt = TestFixtures.ints(c.get("ids"));
                int[] generated = TestFixtures.ints(c.get("generated"));
                assertEquals(c.get("generated_text").asText(), stream(tokenizer, prompt, generated, true));
                assertEquals(c.get("generated_text_with_special").asText(), stream(tokenizer, prompt, generated, false));
                sequences++;
            }
        }
        assertTrue(sequences >= 10, "sequences: " + sequences);
    }

    @Test
    void holdsBackAnIncompleteCharacter() {
        HfTokenizer t = tokenizer("gpt2");
        int[] bytes = new int[3];
        byte[] utf8 = "你".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        for (int i = 0; i < 3; i++) {
            bytes[i] = t.tokenId(String.format("<0x%02X>", utf8[i] & 0xff)).orElseThrow();
        }
        IncrementalDetokenizer d = new IncrementalDetokenizer(t, new int[0], true);
        assertEquals("", d.add(bytes[0]));
        assertEquals("", d.add(bytes[1]));
        assertEquals("", d.add(bytes[2]));
        String rest = d.add(t.tokenId("a").orElseThrow());
        assertEquals("你a", rest + d.flush());
        // a sequence that stops inside the character ends in the U+FFFD decode gives it
        IncrementalDetokenizer cut = new IncrementalDetokenizer(t, new int[0], true);
        cut.add(bytes[0]);
        cut.add(bytes[1]);
        assertEquals(t.decode(new int[] {bytes[0], bytes[1]}, true), cut.flush());
        assertTrue(cut.text().contains("\uFFFD"));
    }

    @Test
    void flushEndsTheStream() {
        HfTokenizer t = tokenizer("llama");
        IncrementalDetokenizer d = new IncrementalDetokenizer(t, new int[] {0}, false);
        for (int id : t.encode("Hello there", false)) {
            d.add(id);
        }
        d.flush();
        assertEquals("Hello there", d.text());
        assertEquals("", d.flush());
        assertThrows(IllegalStateException.class, () -> d.add(5));
    }

    @Provide
    Arbitrary<int[]> llamaIds() {
        return ids(tokenizer("llama"), List.of());
    }

    @Provide
    Arbitrary<int[]> gpt2Ids() {
        HfTokenizer t = tokenizer("gpt2");
        List<Integer> bytes = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            bytes.add(t.tokenId(String.format("<0x%02X>", b)).orElseThrow());
        }
        return ids(t, bytes);
    }

    /** Random ids over the whole vocabulary, with extra weight on special tokens and on byte tokens. */
    private static Arbitrary<int[]> ids(HfTokenizer t, List<Integer> byteTokens) {
        Arbitrary<Integer> any = Arbitraries.integers().between(0, t.vocabSize() - 1);
        Arbitrary<Integer> special = Arbitraries.integers().between(0, 4);
        Arbitrary<Integer> id = byteTokens.isEmpty() ? Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(8, any), net.jqwik.api.Tuple.of(1, special))
                : Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(4, any), net.jqwik.api.Tuple.of(1, special),
                        net.jqwik.api.Tuple.of(4, Arbitraries.of(byteTokens)));
        return id.list().ofMaxSize(40).map(l -> l.stream().mapToInt(Integer::intValue).toArray());
    }

    @Property(tries = 400)
    void llamaRandomSequences(@ForAll("llamaIds") int[] ids, @ForAll boolean skip) {
        stream(tokenizer("llama"), new int[0], ids, skip);
    }

    @Property(tries = 400)
    void gpt2RandomSequences(@ForAll("gpt2Ids") int[] ids, @ForAll boolean skip) {
        stream(tokenizer("gpt2"), new int[0], ids, skip);
    }

    /** Tokens that make transformers' space cleanup patterns (" .", " n't", " 're", ...). */
    @Provide
    Arbitrary<int[]> cleanupIds() {
        HfTokenizer t = tokenizer("cleanup");
        List<Integer> ids = new ArrayList<>();
        for (String token : new String[] {"\u2581", ".", "'", "n", "t", "s", "m", "v", "e", "r", "?", "!", ",", "a"}) {
            t.tokenId(token).ifPresent(ids::add);
        }
        return Arbitraries.of(ids).list().ofMaxSize(30).map(l -> l.stream().mapToInt(Integer::intValue).toArray());
    }

    @Property(tries = 400)
    void cleanupPatternsStream(@ForAll("cleanupIds") int[] ids, @ForAll boolean skip) {
        stream(tokenizer("cleanup"), new int[0], ids, skip);
    }

    @Property(tries = 200)
    void cleanupTokenizerRandomSequences(@ForAll("gpt2Ids") int[] ids, @ForAll boolean skip) {
        stream(tokenizer("cleanup"), new int[0], ids, skip);
    }
}
