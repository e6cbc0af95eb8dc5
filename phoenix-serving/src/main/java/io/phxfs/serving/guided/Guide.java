package io.phxfs.serving.guided;

import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * One request's guided output: where its text stands in the schema's language, and the logits
 * mask that keeps it there. Each step rules out every token whose bytes cannot continue a value
 * of the schema; the ending tokens (EOS, the request's stop tokens) are allowed only once the
 * output is a whole value, and once nothing but whitespace could follow they are all that is
 * allowed. The allowed sets of recent states are kept (a string's interior is one state whatever
 * its text), so a long string costs one walk of the vocabulary, not one per token. Used by one
 * thread (the engine's) at a time.
 */
public final class Guide {
    private static final int CACHED_STATES = 64;
    private final GuidedVocabulary vocabulary;
    private final Map<MatchState, BitSet> allowed = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<MatchState, BitSet> eldest) {
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
        BitSet ok = state.finished() ? new BitSet() : allowed.computeIfAbsent(state, vocabulary::allowed);
        boolean endOk = state.accepting();
        boolean any = false;
        for (int id = 0; id < logits.length; id++) {
            boolean keep = ok.get(id) || endOk && ends.contains(id);
            if (!keep) {
                logits[id] = Float.NEGATIVE_INFINITY;
            } else if (logits[id] != Float.NEGATIVE_INFINITY) {
                any = true;
            }
        }
        if (!any && endOk) {
            // a whole value whose end tokens the other rules ruled out (min_tokens keeps them out):
            // end rather than emit a token that breaks the schema; a value not yet whole is left
            // with nothing allowed, which the sampler reports
            for (int id : ends) {
                if (id < logits.length) {
                    logits[id] = 0;
                }
            }
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
