package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each token's bytes against the native tokenizer's decode: for random sequences of tokens, the
 * concatenated bytes are the decoded text (but for the leading space a SentencePiece decoder's
 * Strip step removes), for a byte-level vocabulary (tiny-chat-llama) and a SentencePiece one
 * with byte fallback (tiny-chat-gpt2).
 */
class TokenBytesTest {
    @ParameterizedTest
    @ValueSource(strings = {TestFixtures.LLAMA, TestFixtures.GPT2})
    void concatenatedBytesAreTheDecodedText(String fixture) throws Exception {
        try (HfTokenizer t = HfTokenizer.open(TestFixtures.model(fixture))) {
            Random rnd = new Random(11);
            int n = t.vocabSize();
            int checked = 0;
            for (int round = 0; round < 800; round++) {
                int[] ids = new int[1 + rnd.nextInt(12)];
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                boolean special = false;
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = rnd.nextInt(n);
                    byte[] b = t.tokenBytes(ids[i]);
                    if (b == null) {
                        special = true;
                        assertTrue(t.isSpecial(ids[i]), "only special tokens have no bytes: " + ids[i]);
                    } else {
                        bytes.writeBytes(b);
                    }
                }
                String text;
                try {
                    text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(bytes.toByteArray())).toString();
                } catch (CharacterCodingException e) {
                    continue; // a character cut off between tokens: the decode shows U+FFFD, not comparable
                }
                String decoded = t.decode(ids, true);
                if (special) {
                    continue;
                }
                assertTrue(text.equals(decoded) || text.equals(" " + decoded),
                        fixture + " " + java.util.Arrays.toString(ids) + ": bytes \"" + text + "\" decode \"" + decoded + "\"");
                checked++;
            }
            assertTrue(checked > 250, checked + " sequences compared");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {TestFixtures.LLAMA, TestFixtures.GPT2})
    void specialTokensHaveNoBytesAndTextTokensTheirs(String fixture) throws Exception {
        try (HfTokenizer t = HfTokenizer.open(TestFixtures.model(fixture))) {
            int eos = t.tokenId(t.eosToken().orElseThrow()).orElseThrow();
            assertNull(t.tokenBytes(eos));
            assertNull(t.tokenBytes(-1));
            assertNull(t.tokenBytes(Integer.MAX_VALUE));
            int[] brace = t.encode("{\"a\": 1}", false);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (int id : brace) {
                out.writeBytes(t.tokenBytes(id));
            }
            String s = out.toString(StandardCharsets.UTF_8);
            assertEquals("{\"a\": 1}", s.startsWith(" ") ? s.substring(1) : s);
            int[] e = t.encode("é", false);
            ByteArrayOutputStream multi = new ByteArrayOutputStream();
            for (int id : e) {
                multi.writeBytes(t.tokenBytes(id));
            }
            byte[] got = multi.toByteArray();
            byte[] want = "é".getBytes(StandardCharsets.UTF_8);
            assertArrayEquals(want, got.length == want.length + 1 && got[0] == ' ' ? java.util.Arrays.copyOfRange(got, 1, got.length)
                    : got, fixture + ": a two-byte character");
        }
    }

    /**
     * A Metaspace decoder (Llama 2's and Mistral's tokenizer.json in their newer form) and an
     * added token that is not special (Qwen's {@code <tool_call>}): the bytes are the decoded
     * text, the added token's being its content.
     */
    @org.junit.jupiter.api.Test
    void aMetaspaceDecoderAndANonSpecialAddedToken(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var root = json.createObjectNode();
        root.put("version", "1.0");
        var added = root.putArray("added_tokens");
        added.addObject().put("id", 0).put("content", "<unk>").put("special", true).put("single_word", false)
                .put("lstrip", false).put("rstrip", false).put("normalized", false);
        added.addObject().put("id", 9).put("content", "<tool_call>").put("special", false).put("single_word", false)
                .put("lstrip", false).put("rstrip", false).put("normalized", false);
        root.putNull("normalizer");
        root.putObject("pre_tokenizer").put("type", "Metaspace").put("replacement", "\u2581").put("prepend_scheme", "first")
                .put("split", true);
        root.putNull("post_processor");
        root.putObject("decoder").put("type", "Metaspace").put("replacement", "\u2581").put("prepend_scheme", "first")
                .put("split", true);
        var model = root.putObject("model");
        model.put("type", "BPE").putNull("dropout").put("unk_token", "<unk>").putNull("continuing_subword_prefix")
                .putNull("end_of_word_suffix").put("fuse_unk", false).put("byte_fallback", false).put("ignore_merges", false);
        var vocab = model.putObject("vocab");
        String[] pieces = {"<unk>", "\u2581", "a", "b", "\u2581a", "\u2581b", "ab", "\u2581ab", "{"};
        for (int i = 0; i < pieces.length; i++) {
            vocab.put(pieces[i], i);
        }
        vocab.put("<tool_call>", 9);
        var merges = model.putArray("merges");
        merges.add("\u2581 a").add("\u2581 b").add("a b").add("\u2581a b");
        java.nio.file.Files.writeString(dir.resolve("tokenizer.json"), json.writeValueAsString(root));
        try (HfTokenizer t = HfTokenizer.open(dir)) {
            assertArrayEquals(" ab".getBytes(StandardCharsets.UTF_8), t.tokenBytes(7), "\u2581ab is a space and ab");
            assertArrayEquals("<tool_call>".getBytes(StandardCharsets.UTF_8), t.tokenBytes(9), "a non-special added token: its content");
            assertNull(t.tokenBytes(0), "a special token adds nothing");
            int[] ids = {7, 9, 5, 8};
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            for (int id : ids) {
                b.writeBytes(t.tokenBytes(id));
            }
            String text = b.toString(StandardCharsets.UTF_8);
            String decoded = t.decode(ids, true);
            assertTrue(text.equals(decoded) || text.equals(" " + decoded), "bytes \"" + text + "\" decode \"" + decoded + "\"");
        }
    }
}
