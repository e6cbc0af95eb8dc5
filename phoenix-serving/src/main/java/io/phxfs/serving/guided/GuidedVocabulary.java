package io.phxfs.serving.guided;

import io.phxfs.serving.text.HfTokenizer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntBinaryOperator;

/**
 * A model's vocabulary ({@link HfTokenizer#tokenBytes}) prepared for finding the tokens a guided
 * output may continue with. Outside strings a walk of a trie of all tokens' bytes answers, cut at
 * the first byte the state refuses. Inside a string, where nearly every token is allowed and such
 * a walk would visit the whole trie, the tokens that are plain text ({@link PlainStringTokens})
 * are taken from a table by their character count, and only the others (quotes, escapes, control
 * bytes, partial UTF-8) are walked, in a second, small trie. Built once per server; immutable but
 * for a memo of the tokens that hold a reasoning gate's tag (a concurrent map), so requests on any
 * thread share it.
 */
public final class GuidedVocabulary {
    private final int size;
    /** Per id its bytes (the tokenizer's arrays), null where it has none. */
    private final byte[][] bytes;
    private final TokenTrie all;
    private final PlainStringTokens plain;
    private final TokenTrie notPlain;
    /** The most characters (UTF-8 lead bytes) any token holds. */
    private final int longestTokenChars;
    /** Per tag (a reasoning gate's), the tokens whose bytes contain it: a memo, filled on first use. */
    private final Map<String, int[]> containing = new ConcurrentHashMap<>();
    /**
     * Per language met (weakly: compiled grammars come and go), the most bytes of it any token can
     * read: a memo, filled on first use.
     */
    private final Map<ByteLanguage, Integer> walkDepths = java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    private GuidedVocabulary(byte[][] bytes, TokenTrie all, PlainStringTokens plain, TokenTrie notPlain) {
        this.size = bytes.length;
        this.bytes = bytes;
        this.all = all;
        this.plain = plain;
        this.notPlain = notPlain;
        int longest = 0;
        for (byte[] b : bytes) {
            int chars = 0;
            for (int i = 0; b != null && i < b.length; i++) {
                chars += ByteLanguage.startsCharacter(b[i] & 0xff) ? 1 : 0;
            }
            longest = Math.max(longest, chars);
        }
        this.longestTokenChars = longest;
    }

    /**
     * The vocabulary of ids {@code 0 .. size - 1} (the model's logits, which may be wider than the
     * tokenizer's vocabulary: ids without bytes are never allowed).
     *
     * @param tokenizer the model's tokenizer
     * @param size the width of the model's logits
     * @return the vocabulary
     */
    public static GuidedVocabulary of(HfTokenizer tokenizer, int size) {
        byte[][] all = new byte[size][];
        for (int id = 0; id < size; id++) {
            all[id] = tokenizer.tokenBytes(id);
        }
        return of(all);
    }

    /**
     * The vocabulary of tokens given as their bytes.
     *
     * @param tokens per id its bytes, null for ids that are never allowed (special, unknown);
     *        kept, not copied
     * @return the vocabulary
     */
    public static GuidedVocabulary of(byte[][] tokens) {
        PlainStringTokens plain = PlainStringTokens.of(tokens);
        return new GuidedVocabulary(tokens, TokenTrie.of(tokens, id -> true), plain,
                TokenTrie.of(tokens, id -> !plain.contains(id)));
    }

    /**
     * The width of the logits this vocabulary covers.
     *
     * @return the number of ids
     */
    public int size() {
        return size;
    }

    /**
     * The bytes a token adds to the text.
     *
     * @param id the token
     * @return its bytes (shared: do not change them), or null for special and unknown tokens
     */
    public byte[] bytes(int id) {
        return id >= 0 && id < size ? bytes[id] : null;
    }

    /**
     * The tokens whose bytes a state accepts, each leading to a live state.
     *
     * @param state where the output is
     * @return the allowed ids
     */
    public TokenSet allowed(MatchState state) {
        int room = state.plainStringRoom();
        BitSet out;
        Frame only = state.onlyHead();
        if (only instanceof PatternFrame p) {
            // inside a pattern's string: its automaton's int steps, the closing quote handed to the matcher
            out = new BitSet(size);
            all.walk(PatternFrame.pack(p.state(), p.count()), (pos, b) -> p.stepPacked(pos, (int) b), state, out);
        } else if (only instanceof TextFrame t) {
            out = new BitSet(size);
            all.walk(t.state(), (s, b) -> t.language().step((int) s, (int) b), state, out);
        } else if (room >= 0) {
            // every plain token within the room keeps the state live (MatchState's guarantee)
            out = plain.upTo(room);
            notPlain.walk(state, out);
        } else {
            out = new BitSet(size);
            all.walk(state, out);
        }
        return TokenSet.of(out, size);
    }

    /**
     * {@code state} with a pattern's character count dropped where it is so far from the
     * {@code maxLength} that no token's bytes could reach it: then every token is allowed or not
     * as without the bound (the count only ever refuses a byte after which fewer characters are
     * left than the fewest the pattern still needs), and the state without the count recurs, so a
     * guide's cache can answer it. Any other state as it is.
     */
    MatchState withoutFarBound(MatchState state) {
        if (state.onlyHead() instanceof PatternFrame p && p.maxChars() != StringShape.UNBOUNDED
                && (long) p.count() + longestTokenChars + p.language().maxMinChars() <= p.maxChars()) {
            return state.withOnlyHead(new PatternFrame(p.language(), p.state(), 0, StringShape.UNBOUNDED));
        }
        return state;
    }

    /**
     * The state whose allowed set a guide's cache keeps for {@code exact}: far from a pattern's
     * bound, the state without the count ({@link #withoutFarBound}); inside a pattern or a text
     * language without a bound in force, the least state its language cannot tell apart from the
     * current one within the most bytes of it a token can read ({@link
     * ByteLanguage#representatives}). Both allow exactly the tokens {@code exact} allows, and recur
     * where the exact state does not (each character of {@code [a-z ]{0,200}} is a new state).
     *
     * @param exact where the output is
     * @return the state to key the cache by and compute the allowed set from
     */
    MatchState cacheKey(MatchState exact) {
        MatchState state = withoutFarBound(exact);
        Frame only = state.onlyHead();
        if (only instanceof PatternFrame p && p.maxChars() == StringShape.UNBOUNDED) {
            int rep = representative(p.language(), p.state());
            return rep == p.state() ? state : state.withOnlyHead(new PatternFrame(p.language(), rep, p.count(), p.maxChars()));
        }
        if (only instanceof TextFrame t) {
            int rep = representative(t.language(), t.state());
            return rep == t.state() ? state : state.withOnlyHead(new TextFrame(t.language(), rep));
        }
        return state;
    }

    private int representative(ByteLanguage language, int state) {
        int[] reps = language.representatives(walkDepth(language));
        return reps == null ? state : reps[state];
    }

    /**
     * The most bytes of {@code language} a walk of this vocabulary's tokens can read: the longest
     * run of bytes the language reads anywhere that begins a token. A token's walk in the language
     * stops at its first other byte (a string's closing quote hands the rest to the matcher).
     */
    int walkDepth(ByteLanguage language) {
        Integer d = walkDepths.get(language);
        if (d == null) {
            boolean[] read = language.readableBytes();
            int depth = 0;
            for (byte[] b : bytes) {
                int i = 0;
                while (b != null && i < b.length && read[b[i] & 0xff]) {
                    i++;
                }
                depth = Math.max(depth, i);
            }
            d = depth;
            walkDepths.put(language, d);
        }
        return d;
    }

    /**
     * Adds the tokens whose bytes a small automaton reads (see {@link TokenTrie#walk(int,
     * IntBinaryOperator, BitSet)}).
     */
    void walk(int start, IntBinaryOperator step, BitSet out) {
        all.walk(start, step, out);
    }

    /**
     * The tokens whose bytes contain {@code tag} whole: computed once per tag with a scan of the
     * vocabulary, then kept.
     */
    int[] containing(byte[] tag) {
        return containing.computeIfAbsent(new String(tag, java.nio.charset.StandardCharsets.ISO_8859_1), k -> {
            int[] out = new int[16];
            int n = 0;
            for (int id = 0; id < size; id++) {
                byte[] b = bytes[id];
                if (b != null && indexOf(b, tag) >= 0) {
                    if (n == out.length) {
                        out = Arrays.copyOf(out, 2 * n);
                    }
                    out[n++] = id;
                }
            }
            return Arrays.copyOf(out, n);
        });
    }

    private static int indexOf(byte[] b, byte[] tag) {
        outer:
        for (int i = 0; i + tag.length <= b.length; i++) {
            for (int j = 0; j < tag.length; j++) {
                if (b[i + j] != tag[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
