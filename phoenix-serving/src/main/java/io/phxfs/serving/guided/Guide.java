package io.phxfs.serving.guided;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.IntConsumer;

/**
 * One request's guided output: where its text stands in the schema's language, and the logits
 * mask that keeps it there. Each step rules out every token whose bytes cannot continue a value
 * of the schema; the ending tokens (EOS, the request's stop tokens) are allowed only once the
 * output is a whole value, and once nothing but whitespace could follow they are all that is
 * allowed. The allowed sets of recent states are kept ({@link TokenSet}s: a few hundred ids
 * outside strings, a bitset inside), so that states that recur (a free string's interior is one
 * state whatever its text) cost one lookup. Used by one thread (the engine's) at a time.
 */
public final class Guide {
    private static final int CACHED_STATES = 64;
    private final GuidedVocabulary vocabulary;
    private final Map<MatchState, TokenSet> allowed = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<MatchState, TokenSet> eldest) {
            return size() > CACHED_STATES;
        }
    };
    private MatchState state;

    /**
     * A guide at the start of the output.
     *
     * @param vocabulary the model's vocabulary trie
     * @param matcher the schema the output must match
     */
    public Guide(GuidedVocabulary vocabulary, JsonSchemaMatcher matcher) {
        this.vocabulary = vocabulary;
        this.state = matcher.start();
    }

    /**
     * Rules out, in {@code logits}, every token the output cannot continue with.
     *
     * @param logits the step's logits (already adjusted by the sampler's other rules), changed here
     * @param ends the tokens that end the output (EOS and the request's stop tokens)
     */
    public void mask(float[] logits, Set<Integer> ends) {
        TokenSet ok = state.finished() ? TokenSet.EMPTY : allowedNow();
        // the ends are few: save their logits, mask as if they were not there, put them back where allowed
        int[] endIds = new int[ends.size()];
        float[] endLogits = new float[endIds.length];
        int n = 0;
        for (int id : ends) {
            if (id >= 0 && id < logits.length) {
                endIds[n] = id;
                endLogits[n++] = logits[id];
            }
        }
        GapMask gaps = new GapMask(logits);
        ok.forEach(gaps);
        gaps.finish();
        boolean any = gaps.any;
        boolean endOk = state.accepting();
        if (endOk) {
            for (int i = 0; i < n; i++) {
                logits[endIds[i]] = endLogits[i];
                any |= endLogits[i] != Float.NEGATIVE_INFINITY;
            }
        }
        if (!any && endOk) {
            // a whole value whose end tokens the other rules ruled out (min_tokens keeps them out):
            // end rather than emit a token that breaks the schema; a value not yet whole is left
            // with nothing allowed, which the sampler reports
            for (int i = 0; i < n; i++) {
                logits[endIds[i]] = 0;
            }
        }
    }

    /** The current state's allowed set, from the cache where it is worth keeping there. */
    private TokenSet allowedNow() {
        TokenSet ok = allowed.get(state);
        if (ok == null) {
            ok = vocabulary.allowed(state);
            // a bounded string's positions are a new state at every character and take the
            // plain-text table's fast path: kept, their full-width sets would crowd the cache
            // (and its memory) with entries used once
            int room = state.plainStringRoom();
            if (room < 0 || room == Integer.MAX_VALUE) {
                allowed.put(state, ok);
            }
        }
        return ok;
    }

    /** The number of allowed sets kept, for tests of the cache's footprint. */
    int cachedStates() {
        return allowed.size();
    }

    /**
     * Rules out the logits between the allowed ids, which come in increasing order: each id
     * costs one step, each gap one fill.
     */
    private static final class GapMask implements IntConsumer {
        private final float[] logits;
        private int next;
        boolean any;

        GapMask(float[] logits) {
            this.logits = logits;
        }

        @Override
        public void accept(int id) {
            if (id >= logits.length) {
                return; // the vocabulary may be wider than these logits
            }
            if (id > next) { // inside strings most ids follow one another: no gap
                Arrays.fill(logits, next, id, Float.NEGATIVE_INFINITY);
            }
            any |= logits[id] != Float.NEGATIVE_INFINITY;
            next = id + 1;
        }

        void finish() {
            Arrays.fill(logits, next, logits.length, Float.NEGATIVE_INFINITY);
        }
    }

    /**
     * Moves past the chosen token.
     *
     * @param token the token the sampler chose (an ending token moves nothing)
     */
    public void advance(int token) {
        byte[] bytes = vocabulary.bytes(token);
        if (bytes == null) {
            return;
        }
        MatchState s = state;
        for (byte b : bytes) {
            s = s == null ? null : s.advance(b & 0xff);
        }
        if (s != null) {
            state = s;
        }
    }

    /**
     * Whether the output is a whole value that nothing but whitespace could extend.
     *
     * @return true when it should end here
     */
    public boolean finished() {
        return state.finished();
    }

    /**
     * Whether the output so far is a whole value of the schema.
     *
     * @return true when it may end here
     */
    public boolean accepting() {
        return state.accepting();
    }
}
