package io.phxfs.serving.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Set;

/**
 * What incremental decoding must know about tokenizer.json's decoder. Most decoders (ByteLevel,
 * Metaspace, Replace, ByteFallback, Fuse, Strip from the start, WordPiece, CTC, none) are local:
 * the text of a token depends only on its neighbours within a window that starts at a settled
 * point, so decoding a window reproduces the full decode's continuation. Two things break that:
 * a ByteFallback decoder turns a run of {@code <0xAB>} tokens into text only as a whole (an
 * incomplete run decodes to one U+FFFD per byte, even bytes that later become a valid
 * character), and some decoders rewrite the last token (BPEDecoder's suffix, Strip from the
 * end, unknown kinds), so that token's text stays open until the next one arrives.
 *
 * @param byteFallback a ByteFallback step is present
 * @param lastTokenOpen the last token's text may still change when another token follows
 */
record DecoderTraits(boolean byteFallback, boolean lastTokenOpen) {
    private static final Set<String> LOCAL = Set.of("ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse",
            "WordPiece", "CTC", "Sequence", "Strip");

    /**
     * Refuses a decoder the native tokenizers library (0.21, in DJL's jar) cannot run safely: a
     * Strip step with {@code stop > 0} indexes before the start of an empty token text (and
     * past the end where start and stop overlap), and that panic, across JNI, aborts the whole
     * JVM rather than failing one request.
     *
     * @throws IOException naming the file and the decoder field
     */
    static void requireSupported(JsonFile file) throws IOException {
        JsonNode decoder = file.root().get("decoder");
        if (decoder != null && !decoder.isNull()) {
            requireSupported(file, decoder, "decoder");
        }
    }

    private static void requireSupported(JsonFile file, JsonNode decoder, String field) throws IOException {
        if (decoder.path("type").asText("").equals("Strip") && decoder.path("stop").asInt(0) > 0) {
            throw file.fieldError(field, "a Strip decoder with \"stop\": " + decoder.path("stop").asInt()
                    + " is not supported: the tokenizers library (0.21, through DJL) panics on it for an empty"
                    + " token text, which aborts the whole server process");
        }
        JsonNode children = decoder.path("decoders");
        for (int i = 0; i < children.size(); i++) {
            requireSupported(file, children.get(i), field + ".decoders[" + i + "]");
        }
    }

    static DecoderTraits of(JsonNode decoder) {
        if (decoder == null || decoder.isNull()) {
            return new DecoderTraits(false, false);
        }
        boolean[] traits = new boolean[2];
        visit(decoder, traits);
        return new DecoderTraits(traits[0], traits[1]);
    }

    private static void visit(JsonNode decoder, boolean[] traits) {
        String type = decoder.path("type").asText("");
        if (!LOCAL.contains(type)) {
            traits[1] = true;
        }
        if (type.equals("ByteFallback")) {
            traits[0] = true;
        }
        if (type.equals("Strip") && decoder.path("stop").asInt(0) > 0) {
            traits[1] = true;
        }
        for (JsonNode child : decoder.path("decoders")) {
            visit(child, traits);
        }
    }
}
