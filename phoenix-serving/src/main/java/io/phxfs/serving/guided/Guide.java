package io.phxfs.serving.guided;

import java.util.Arrays;
import java.util.BitSet;
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
 * state whatever its text) cost one lookup.
 *
 * <p>With a {@link ReasoningGate} the schema applies only after the model's reasoning block:
 * inside it every token is allowed but those that would close the block and go on with bytes
 * no value starts with; before it (where the output may open one) a token must either continue
 * the opening tag or start a value. Used by one thread (the engine's) at a time.
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
    private final ReasoningGate gate;
    private final MatchState start;
    private Position pos;

    /** Where the output is guided: before a block it may open, inside the block, or in the value. */
    private enum Phase { BEFORE, REASONING, GUIDED }

    /**
     * A position of the output: in {@code BEFORE}, the leading whitespace and the bytes of the
     * opening tag read, with the value's state if the output so far may also start a value
     * (null if not); in {@code REASONING}, the bytes of the closing tag the output ends with; in
     * {@code GUIDED}, the value's state.
     */
    private record Position(Phase phase, int ws, int matched, MatchState state) {
        static Position guided(MatchState s) {
            return new Position(Phase.GUIDED, 0, 0, s);
        }
    }

    /**
     * A guide at the start of the output, guided from its first byte.
     *
     * @param vocabulary the model's vocabulary trie
     * @param matcher the language the output must belong to (a JSON Schema's, a regular expression's...)
     */
    public Guide(GuidedVocabulary vocabulary, OutputGrammar matcher) {
        this(vocabulary, matcher, null);
    }

    /**
     * A guide at the start of the output.
     *
     * @param vocabulary the model's vocabulary trie
     * @param matcher the language the output must belong to (a JSON Schema's, a regular expression's...)
     * @param gate where a reasoning model's output starts to be guided, or null for its first byte
     */
    public Guide(GuidedVocabulary vocabulary, OutputGrammar matcher, ReasoningGate gate) {
        this.vocabulary = vocabulary;
        this.start = matcher.start();
        this.gate = gate;
        if (gate == null) {
            this.pos = Position.guided(start);
        } else if (gate.startsInside()) {
            this.pos = new Position(Phase.REASONING, 0, 0, null);
        } else {
            this.pos = new Position(Phase.BEFORE, 0, 0, start);
        }
    }

    /**
     * Rules out, in {@code logits}, every token the output cannot continue with.
     *
     * @param logits the step's logits (already adjusted by the sampler's other rules), changed here
     * @param ends the tokens that end the output (EOS and the request's stop tokens)
     */
    public void mask(float[] logits, Set<Integer> ends) {
        Position p = pos;
        switch (p.phase()) {
            case GUIDED -> mask(logits, ends, p.state().finished() ? TokenSet.EMPTY : allowedNow(p.state()),
                    p.state().accepting());
            case BEFORE -> {
                BitSet ok = p.state() == null ? new BitSet() : vocabulary.allowed(p.state()).toBitSet();
                byte[] open = gate.open();
                BitSet opening = new BitSet();
                vocabulary.walk(p.ws() << 8 | p.matched(), (st, b) -> {
                    int ws = st >>> 8;
                    int k = st & 0xff;
                    if (k == 0 && ReasoningGate.leadingSpace(b)) {
                        return ws < JsonWhitespace.MAX_RUN ? (ws + 1) << 8 : -1;
                    }
                    if ((open[k] & 0xff) != b) {
                        return -1;
                    }
                    return k + 1 == open.length ? TokenTrie.EVERYTHING : ws << 8 | (k + 1);
                }, opening);
                // a token that opens the block may close it too and go on: what follows must start a value
                for (int id = opening.nextSetBit(0); id >= 0; id = opening.nextSetBit(id + 1)) {
                    if (after(p, vocabulary.bytes(id)) != null) {
                        ok.set(id);
                    }
                }
                mask(logits, ends, TokenSet.of(ok, vocabulary.size()), p.state() != null && p.state().accepting());
            }
            case REASONING -> maskClosings(logits, p);
        }
    }

    /**
     * Inside the reasoning block every token is free but one that closes the block and goes on
     * with bytes no value starts with. Only tokens that complete the closing tag can: those that
     * hold it whole (a short list per vocabulary), and those that begin with its rest after one
     * of the tag's prefixes the output ends with.
     */
    private void maskClosings(float[] logits, Position p) {
        BitSet closing = new BitSet();
        for (int id : vocabulary.containing(gate.close())) {
            closing.set(id);
        }
        byte[] close = gate.close();
        for (int k = p.matched(); k > 0; k = gate.border(k)) {
            vocabulary.walk(k, (i, b) -> (close[i] & 0xff) != b ? -1 : i + 1 == close.length ? TokenTrie.EVERYTHING : i + 1,
                    closing);
        }
        for (int id = closing.nextSetBit(0); id >= 0 && id < logits.length; id = closing.nextSetBit(id + 1)) {
            if (after(p, vocabulary.bytes(id)) == null) {
                logits[id] = Float.NEGATIVE_INFINITY;
            }
        }
    }

    /** Rules out all but {@code ok}, and the ends unless the output may end here. */
    private void mask(float[] logits, Set<Integer> ends, TokenSet ok, boolean endOk) {
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
    private TokenSet allowedNow(MatchState exact) {
        // far from a pattern's maxLength the count changes no token's fate, and within what a token
        // can read many automaton states are alike: the key state recurs where the exact one does
        // not (a URL's path characters, a bounded repetition's positions), with the same allowed set
        MatchState state = vocabulary.cacheKey(exact);
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
        Position p = pos;
        if (p.phase() == Phase.GUIDED) {
            MatchState s = p.state();
            for (byte b : bytes) {
                s = s == null ? null : s.advance(b & 0xff);
            }
            if (s != null && s != p.state()) {
                pos = Position.guided(s);
            }
            return;
        }
        Position next = after(p, bytes);
        if (next != null) {
            pos = next;
        }
    }

    /** The position after {@code bytes} from {@code p}, or null where they cannot come. */
    private Position after(Position p, byte[] bytes) {
        for (int i = 0; i < bytes.length && p != null; i++) {
            p = step(p, bytes[i] & 0xff);
        }
        return p;
    }

    /** The position after one byte, or null where it cannot come. */
    private Position step(Position p, int b) {
        return switch (p.phase()) {
            case GUIDED -> {
                MatchState s = p.state().advance(b);
                yield s == null ? null : Position.guided(s);
            }
            case REASONING -> {
                int m = gate.closeStep(p.matched(), b);
                yield m == gate.closeLength() ? Position.guided(start) : new Position(Phase.REASONING, 0, m, null);
            }
            case BEFORE -> {
                MatchState value = p.state() == null ? null : p.state().advance(b);
                byte[] open = gate.open();
                int ws = p.ws();
                int k = p.matched();
                if (k == 0 && ReasoningGate.leadingSpace(b) && ws < JsonWhitespace.MAX_RUN) {
                    ws++;
                } else if ((open[k] & 0xff) == b) {
                    k++;
                    if (k == open.length) {
                        yield new Position(Phase.REASONING, 0, 0, null);
                    }
                } else {
                    yield value == null ? null : Position.guided(value);
                }
                yield new Position(Phase.BEFORE, ws, k, value);
            }
        };
    }

    /**
     * Whether the output is a whole value that nothing but whitespace could extend.
     *
     * @return true when it should end here
     */
    public boolean finished() {
        return pos.phase() == Phase.GUIDED && pos.state().finished();
    }

    /**
     * Whether the output may end here: a whole value of the schema, or (with a gate) inside the
     * reasoning block, where an end token ends the output as it does free text.
     *
     * @return true when it may end here
     */
    public boolean accepting() {
        Position p = pos;
        return switch (p.phase()) {
            case GUIDED -> p.state().accepting();
            case REASONING -> true;
            case BEFORE -> p.state() != null && p.state().accepting();
        };
    }

    /**
     * Whether the schema applies to the next token: false before and inside a reasoning block.
     *
     * @return true once the output is guided
     */
    public boolean guiding() {
        return pos.phase() == Phase.GUIDED;
    }
}
