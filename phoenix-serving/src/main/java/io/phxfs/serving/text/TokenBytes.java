package io.phxfs.serving.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The bytes each token contributes to the decoded text, as tokenizer.json's decoder produces
 * them: a ByteLevel decoder maps each character of the token back to its byte (GPT-2's
 * byte-to-unicode table, used by Llama 3, Qwen, Mistral's Tekken...); otherwise the decoder's
 * Replace and Metaspace steps turn {@code ▁} into a space and a ByteFallback step turns
 * {@code <0xAB>} into its byte (SentencePiece models: Llama 2, Gemma, Mistral v0.1). Added
 * tokens contribute their content; special ones nothing (null). What guided decoding matches a
 * token against: the text a token adds, byte by byte, where a character may span tokens.
 */
final class TokenBytes {
    private TokenBytes() {
    }

    /**
     * Every id's bytes.
     *
     * @param decoder tokenizer.json's {@code decoder}, or null
     * @param vocabulary the vocabulary
     * @return per id its bytes, null for special tokens and ids without a token
     */
    static byte[][] of(JsonNode decoder, Vocabulary vocabulary) {
        List<JsonNode> steps = new ArrayList<>();
        flatten(decoder, steps);
        boolean byteLevel = steps.stream().anyMatch(s -> s.path("type").asText("").equals("ByteLevel"));
        int[] byteOf = byteLevel ? unicodeToByte() : null;
        byte[][] out = new byte[vocabulary.maxId() + 1][];
        for (int id = 0; id < out.length; id++) {
            String token = vocabulary.token(id);
            if (token == null || vocabulary.isSpecial(id)) {
                continue;
            }
            if (vocabulary.isAdded(id)) {
                out[id] = token.getBytes(StandardCharsets.UTF_8);
            } else if (byteLevel) {
                out[id] = byteLevel(token, byteOf);
            } else if (vocabulary.isByteToken(id)) {
                out[id] = new byte[] {(byte) Integer.parseInt(token.substring(3, 5), 16)};
            } else {
                out[id] = replaced(token, steps).getBytes(StandardCharsets.UTF_8);
            }
        }
        return out;
    }

    private static void flatten(JsonNode decoder, List<JsonNode> steps) {
        if (decoder == null || decoder.isNull()) {
            return;
        }
        if (decoder.path("type").asText("").equals("Sequence")) {
            for (JsonNode d : decoder.path("decoders")) {
                flatten(d, steps);
            }
        } else {
            steps.add(decoder);
        }
    }

    /** A SentencePiece-style token's text: the decoder's Replace steps and Metaspace's replacement, in order. */
    private static String replaced(String token, List<JsonNode> steps) {
        String s = token;
        for (JsonNode step : steps) {
            switch (step.path("type").asText("")) {
                case "Replace" -> {
                    String pattern = step.path("pattern").path("String").asText(null);
                    if (pattern != null && !pattern.isEmpty()) {
                        s = s.replace(pattern, step.path("content").asText(""));
                    }
                }
                case "Metaspace" -> s = s.replace(step.path("replacement").asText("\u2581"), " ");
                default -> {
                }
            }
        }
        return s;
    }

    private static byte[] byteLevel(String token, int[] byteOf) {
        ByteArrayOutputStream b = new ByteArrayOutputStream(token.length());
        token.codePoints().forEach(c -> {
            if (c < byteOf.length && byteOf[c] >= 0) {
                b.write(byteOf[c]);
            } else {
                // not a byte-level character (a merged added text, say): its own UTF-8
                b.writeBytes(new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8));
            }
        });
        return b.toByteArray();
    }

    /**
     * GPT-2's {@code bytes_to_unicode} inverted: printable Latin-1 bytes map to themselves, the
     * other 68 bytes to U+0100 onwards in byte order.
     */
    private static int[] unicodeToByte() {
        int[] byteOf = new int[0x100 + 256];
        java.util.Arrays.fill(byteOf, -1);
        int next = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            byteOf[printable ? b : 0x100 + next++] = b;
        }
        return byteOf;
    }
}
