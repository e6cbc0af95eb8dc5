package io.phxfs.serving.text;

import java.util.Arrays;
import java.util.Objects;

/**
 * Streaming decode of generated tokens: {@link #add} returns the text each new token settles,
 * never half a UTF-8 character, and the pieces (with {@link #flush}'s) add up to exactly
 * {@link HfTokenizer#decode decode(generated ids, skipSpecialTokens)}.
 *
 * <p>Each step decodes a short window instead of the whole sequence: the window starts at an
 * earlier settled token (so that a decoder's start-of-text rules, such as Metaspace and Strip
 * dropping a leading space, act on text already emitted) and what it decodes beyond that prefix
 * is the new text. Text stays held back while it ends in U+FFFD (bytes of a character still to
 * come), while it ends in a run of byte-fallback tokens (which decode as a whole), and, for
 * decoders that rewrite the last token, for the last token; see {@code DecoderTraits}. Not
 * thread-safe: one instance per sequence.
 */
public final class IncrementalDetokenizer {
    private static final char REPLACEMENT = '\uFFFD';

    private final HfTokenizer tokenizer;
    private final Vocabulary vocabulary;
    private final boolean skipSpecialTokens;
    private final SpaceCleanup cleanup;
    private final StringBuilder text = new StringBuilder();
    private final StringBuilder raw = new StringBuilder();

    /** The tokens that produce text (with skipping, special tokens are left out up front). */
    private int[] ids = new int[16];
    private int count;
    /** Where the decode window starts. */
    private int windowStart;
    /** Tokens before this are settled: later tokens cannot change their text. */
    private int settled;
    /** decode(ids[windowStart, settled)). */
    private String prefix = "";
    /** Characters of the text after the prefix already emitted. */
    private int emittedAfterPrefix;
    private boolean flushed;

    /**
     * Starts the stream of one generated sequence.
     *
     * @param tokenizer the model's tokenizer
     * @param promptIds the prompt the generation continues; it contributes no text (the pieces
     *        are the decode of the generated ids alone, as transformers decodes
     *        {@code output[len(prompt):]}), so it is only checked
     * @param skipSpecialTokens whether special tokens are left out, as in {@link HfTokenizer#decode}
     * @throws NullPointerException when an argument is null
     */
    public IncrementalDetokenizer(HfTokenizer tokenizer, int[] promptIds, boolean skipSpecialTokens) {
        this(tokenizer, promptIds, skipSpecialTokens, false);
    }

    /**
     * Starts the stream of one generated sequence, guided or not.
     *
     * @param tokenizer the model's tokenizer
     * @param promptIds the prompt the generation continues (only checked)
     * @param skipSpecialTokens whether special tokens are left out
     * @param guided the output was guided by a schema: the tokenizer's {@code clean_up_tokenization_spaces}
     *        does not apply to text whose bytes the schema matched ({@code " ."} in an enum value must stay)
     * @throws NullPointerException when an argument is null
     */
    public IncrementalDetokenizer(HfTokenizer tokenizer, int[] promptIds, boolean skipSpecialTokens, boolean guided) {
        this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
        Objects.requireNonNull(promptIds, "promptIds");
        this.vocabulary = tokenizer.vocabulary();
        this.skipSpecialTokens = skipSpecialTokens;
        this.cleanup = tokenizer.cleansUpSpaces() && !guided ? new SpaceCleanup() : null;
    }

    /**
     * Adds the next generated token.
     *
     * @param id the token id
     * @return the text this token settles: possibly empty (an incomplete character, a special
     *         token being skipped), possibly including text of earlier tokens
     * @throws IllegalStateException after {@link #flush}
     */
    public String add(int id) {
        if (flushed) {
            throw new IllegalStateException("add after flush");
        }
        if (vocabulary.token(id) == null || skipSpecialTokens && vocabulary.isSpecial(id)) {
            return "";
        }
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
        }
        ids[count++] = id;
        return emit(step());
    }

    /**
     * Ends the stream: the text still held back, which may end in a real U+FFFD when the
     * sequence stops inside a character (as {@link HfTokenizer#decode} gives it).
     *
     * @return the remaining text; empty on a second call
     */
    public String flush() {
        if (flushed) {
            return "";
        }
        flushed = true;
        // the whole sequence once, so that the text ends exactly as decode ends it
        String full = tokenizer.decodeRaw(ids, 0, count, skipSpecialTokens);
        String rest;
        if (full.startsWith(raw.toString())) {
            rest = full.substring(raw.length());
        } else {
            String window = windowText();
            rest = window.substring(Math.min(emittedAfterPrefix, window.length()));
        }
        raw.append(rest);
        String out = cleanup == null ? rest : cleanup.push(rest) + cleanup.flush();
        text.append(out);
        return out;
    }

    /**
     * The text emitted so far, the concatenation of every returned piece.
     *
     * @return the text
     */
    public String text() {
        return text.toString();
    }

    private String emit(String rawPiece) {
        if (rawPiece.isEmpty()) {
            return "";
        }
        raw.append(rawPiece);
        String out = cleanup == null ? rawPiece : cleanup.push(rawPiece);
        text.append(out);
        return out;
    }

    /** Decodes the window, emits what became final and moves the settled point. */
    private String step() {
        String afterPrefix = windowText();
        int open = firstOpenToken();
        String settledText = open == count ? afterPrefix : textAfterPrefix(open);
        String stable = withoutTrailingReplacement(settledText);
        String piece = stable.length() > emittedAfterPrefix ? stable.substring(emittedAfterPrefix) : "";
        emittedAfterPrefix = Math.max(emittedAfterPrefix, stable.length());
        if (open > settled && stable.length() == settledText.length()) {
            settle(open, settledText);
        }
        return piece;
    }

    /** The window's text past the prefix. */
    private String windowText() {
        return textAfterPrefix(count);
    }

    private String textAfterPrefix(int end) {
        String window = tokenizer.decodeRaw(ids, windowStart, end, skipSpecialTokens);
        if (!window.startsWith(prefix)) {
            // a decoder that is not local after all: decode from the start from now on
            windowStart = 0;
            prefix = tokenizer.decodeRaw(ids, 0, settled, skipSpecialTokens);
            window = tokenizer.decodeRaw(ids, 0, end, skipSpecialTokens);
            if (!window.startsWith(prefix)) {
                return window.substring(Math.min(prefix.length(), window.length()));
            }
        }
        return window.substring(prefix.length());
    }

    /** The first token whose text later tokens may still change (count when there is none). */
    private int firstOpenToken() {
        int open = count;
        if (vocabulary.decoder().lastTokenOpen()) {
            open = count - 1;
        }
        if (vocabulary.decoder().byteFallback()) {
            int run = count;
            while (run > settled && vocabulary.isByteToken(ids[run - 1])) {
                run--;
            }
            open = Math.min(open, run);
        }
        return Math.max(open, settled);
    }

    /**
     * Makes {@code ids[settled, end)} settled. The window then starts at the old settled point
     * when that leaves a prefix with text (a decoder's start-of-text rule then still falls on
     * it), which keeps every window a few tokens long.
     */
    private void settle(int end, String settledText) {
        String nextPrefix = tokenizer.decodeRaw(ids, settled, end, skipSpecialTokens);
        if (!nextPrefix.isEmpty()) {
            windowStart = settled;
            prefix = nextPrefix;
        } else {
            prefix = prefix + settledText;
        }
        emittedAfterPrefix -= settledText.length();
        settled = end;
    }

    private static String withoutTrailingReplacement(String s) {
        int end = s.length();
        while (end > 0 && s.charAt(end - 1) == REPLACEMENT) {
            end--;
        }
        return s.substring(0, end);
    }
}
