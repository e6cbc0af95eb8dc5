package io.phxfs.serving.text;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A checkpoint's own tokenizer, as transformers uses it: tokenizer.json run by the Hugging Face
 * tokenizers library (DJL's binding, whose native library comes in its jar, so nothing is ever
 * downloaded) and the special tokens of tokenizer_config.json and special_tokens_map.json.
 * {@link #encode} and {@link #decode} give exactly what {@code tokenizer(text)["input_ids"]}
 * and {@code tokenizer.decode(ids)} give in transformers 5, including the special tokens those
 * files name but tokenizer.json does not list, and the space cleanup
 * {@code clean_up_tokenization_spaces} asks for. Safe for concurrent use; {@link #close}
 * releases the native tokenizer.
 */
public final class HfTokenizer implements AutoCloseable {
    private static final String TOKENIZER_JSON = "tokenizer.json";
    /** transformers never truncates or pads unless asked; DJL would by default. */
    private static final Map<String, String> NATIVE_OPTIONS = Map.of("truncation", "false", "padding", "false");

    private final HuggingFaceTokenizer tokenizer;
    private final Vocabulary vocabulary;
    private final TokenizerConfig config;
    private final byte[][] tokenBytes;
    private final AtomicBoolean closed = new AtomicBoolean();

    private HfTokenizer(HuggingFaceTokenizer tokenizer, Vocabulary vocabulary, TokenizerConfig config, byte[][] tokenBytes) {
        this.tokenizer = tokenizer;
        this.vocabulary = vocabulary;
        this.config = config;
        this.tokenBytes = tokenBytes;
    }

    /**
     * Opens the tokenizer of a model directory: {@code tokenizer.json} (required) and, when
     * present, {@code tokenizer_config.json} and {@code special_tokens_map.json}, whose special
     * tokens may be strings or AddedToken objects (<code>{"content": ...}</code>).
     *
     * @param modelDir the checkpoint directory
     * @return the tokenizer, to be closed
     * @throws IOException when a file cannot be read (the message names the path and the reason)
     *         or is not what transformers accepts (the message names the file and the field), or has
     *         a decoder the native library would abort the process on (a Strip step with stop &gt; 0)
     */
    public static HfTokenizer open(Path modelDir) throws IOException {
        Path file = modelDir.resolve(TOKENIZER_JSON);
        JsonFile spec = JsonFile.read(file);
        DecoderTraits.requireSupported(spec);
        TokenizerConfig config = TokenizerConfig.read(modelDir);
        ObjectNode json = (ObjectNode) spec.root();
        Vocabulary vocabulary = Vocabulary.of(spec, json, config);
        byte[] bytes = JsonFile.MAPPER.writeValueAsBytes(json);
        HuggingFaceTokenizer tokenizer;
        try {
            tokenizer = HuggingFaceTokenizer.newInstance(new ByteArrayInputStream(bytes), NATIVE_OPTIONS);
        } catch (RuntimeException e) {
            throw new IOException(file + ": the tokenizers library rejected it: " + e.getMessage(), e);
        }
        return new HfTokenizer(tokenizer, vocabulary, config, TokenBytes.of(json.get("decoder"), vocabulary));
    }

    /**
     * The bytes token {@code id} adds to the decoded text (what guided decoding matches it
     * against): a byte-level token's bytes, a SentencePiece piece with its {@code ▁} as a
     * space, a {@code <0xAB>} byte token's byte, an added token's content.
     *
     * @param id the token id
     * @return its bytes (shared: do not change them), or null for special tokens and unknown ids
     */
    public byte[] tokenBytes(int id) {
        return id >= 0 && id < tokenBytes.length ? tokenBytes[id] : null;
    }

    /**
     * The ids of {@code text}, as transformers' {@code tokenizer(text, add_special_tokens=...)["input_ids"]}.
     *
     * @param text the text
     * @param addSpecialTokens whether the post-processor adds its special tokens (BOS and the like)
     * @return the token ids
     * @throws IllegalStateException when the tokenizer is closed
     */
    public int[] encode(String text, boolean addSpecialTokens) {
        checkOpen();
        long[] ids = tokenizer.encode(text, addSpecialTokens, false).getIds();
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Math.toIntExact(ids[i]);
        }
        return out;
    }

    /**
     * The text of {@code ids}, as transformers' {@code tokenizer.decode(ids, skip_special_tokens=...)};
     * ids the tokenizer does not know produce no text, as there.
     *
     * @param ids the token ids
     * @param skipSpecialTokens whether added tokens marked special are left out
     * @return the text
     * @throws IllegalStateException when the tokenizer is closed
     */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        String raw = decodeRaw(ids, 0, ids.length, skipSpecialTokens);
        return config.cleanUpSpaces() ? SpaceCleanup.apply(raw) : raw;
    }

    /**
     * The vocabulary size including added tokens, as transformers' {@code len(tokenizer)}.
     *
     * @return the number of distinct token strings
     */
    public int vocabSize() {
        return vocabulary.size();
    }

    /**
     * The id of a token string (an added token or a vocabulary entry), as {@code convert_tokens_to_ids}.
     *
     * @param token the token as it appears in tokenizer.json
     * @return its id, or empty when the tokenizer has no such token
     */
    public OptionalInt tokenId(String token) {
        return vocabulary.id(token);
    }

    /**
     * The beginning-of-sequence token.
     *
     * @return the BOS token's text, or empty when the configuration names none
     */
    public Optional<String> bosToken() {
        return Optional.ofNullable(config.templateTokens().get("bos_token"));
    }

    /**
     * The end-of-sequence token.
     *
     * @return the EOS token's text, or empty when the configuration names none
     */
    public Optional<String> eosToken() {
        return Optional.ofNullable(config.templateTokens().get("eos_token"));
    }

    /**
     * The special tokens a chat template sees: {@code bos_token}, {@code eos_token},
     * {@code unk_token} and {@code pad_token}, those the configuration defines.
     *
     * @return variable name to token text, unmodifiable
     */
    public Map<String, String> specialTokens() {
        return config.templateTokens();
    }

    /**
     * Whether {@code id} is an added token marked special (what {@code skip_special_tokens} drops).
     *
     * @param id a token id
     * @return true for a special token
     */
    public boolean isSpecial(int id) {
        return vocabulary.isSpecial(id);
    }

    /** Releases the native tokenizer; later calls do nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            tokenizer.close();
        }
    }

    /** The decode of {@code ids[from, to)} before the space cleanup, which incremental decoding applies itself. */
    String decodeRaw(int[] ids, int from, int to, boolean skipSpecialTokens) {
        checkOpen();
        long[] window = new long[to - from];
        for (int i = from; i < to; i++) {
            window[i - from] = ids[i];
        }
        return tokenizer.decode(window, skipSpecialTokens);
    }

    Vocabulary vocabulary() {
        return vocabulary;
    }

    boolean cleansUpSpaces() {
        return config.cleanUpSpaces();
    }

    TokenizerConfig config() {
        return config;
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("tokenizer closed");
        }
    }

    @Override
    public String toString() {
        return "HfTokenizer[" + vocabulary.size() + " tokens, " + specialTokens() + "]";
    }
}
