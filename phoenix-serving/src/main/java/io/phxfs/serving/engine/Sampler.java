package io.phxfs.serving.engine;

import io.phxfs.serving.guided.Guide;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Chooses a request's next token from the logits: first the logits are adjusted (logit_bias, the
 * repetition, frequency and presence penalties; before {@code min_tokens}, the tokens that would
 * end the generation are ruled out), then argmax (lowest id on ties, as torch's argmax) at
 * temperature 0, else a draw from the tempered softmax restricted by min-p, top-k, then top-p.
 * One per request, so that a seed gives the same tokens whatever else is running; it keeps the
 * request's output tokens for the penalties. A guided request's {@link Guide} then rules out
 * the tokens its schema does not allow, and follows the chosen one.
 */
final class Sampler {
    private final SamplingParams params;
    private final SplittableRandom random;
    /**
     * The prompt's and the output's distinct tokens, for the repetition penalty (empty without
     * one): a bit set kept as tokens come, since a set rebuilt every step would cost the engine's
     * one thread thousands of boxed inserts per request per token.
     */
    private final BitSet seen = new BitSet();
    /** Each output token so far and how often it came. */
    private final Map<Integer, Integer> counts = new HashMap<>();
    private int generated;
    /** The request's guided output (its schema's mask), or null. */
    private final Guide guide;

    Sampler(SamplingParams params) {
        this(params, new int[0], null);
    }

    Sampler(SamplingParams params, int[] promptIds) {
        this(params, promptIds, null);
    }

    Sampler(SamplingParams params, int[] promptIds, Guide guide) {
        this.params = params;
        this.guide = guide;
        this.random = params.seed() != null ? new SplittableRandom(params.seed()) : new SplittableRandom();
        if (params.repetitionPenalty() != 1) {
            for (int id : promptIds) {
                if (id >= 0) {
                    seen.set(id);
                }
            }
        }
    }

    /** The next token; {@code logits} is changed. */
    int next(float[] logits) {
        return next(logits, Set.of());
    }

    /**
     * The next token.
     *
     * @param logits the model's, changed here
     * @param eos the model's end-of-sequence tokens, ruled out (with the stop tokens) before min_tokens
     */
    int next(float[] logits, Set<Integer> eos) {
        adjust(logits, eos);
        Set<Integer> ends = null;
        boolean wholeBefore = false;
        if (guide != null) {
            ends = ends(eos);
            wholeBefore = guide.accepting();
            guideMask(logits, ends);
        }
        int token = choose(logits);
        if (guide != null) {
            // an ending token ends a guided output only where it is whole; before, a stop token
            // that the schema's text uses (a "}" in stop_token_ids) is that text
            guidedEnd = wholeBefore && ends.contains(token);
            if (!guidedEnd) {
                guide.advance(token);
            }
        }
        generated++;
        counts.merge(token, 1, Integer::sum);
        if (params.repetitionPenalty() != 1) {
            seen.set(token);
        }
        return token;
    }

    /**
     * The guide's mask (an ending token only where the output is a whole value, or as the
     * schema's own text), then, when every token the schema allows was ruled out by the
     * request's other settings, a failure rather than a token outside the schema.
     */
    private void guideMask(float[] logits, Set<Integer> ends) {
        guide.mask(logits, ends);
        for (float l : logits) {
            if (l != Float.NEGATIVE_INFINITY) {
                return;
            }
        }
        throw new IllegalStateException("guided decoding: no token can continue the output as the schema requires:"
                + " the request's other settings (logit_bias, min_tokens, stop_token_ids, ...) rule out every token"
                + " the schema allows here");
    }

    /**
     * Whether this request's output is guided by a schema.
     *
     * @return true with a guide
     */
    boolean guided() {
        return guide != null;
    }

    /**
     * Whether the last token chosen for a guided output ended it: an ending token chosen where
     * the output was a whole value (not one written as the schema's text).
     *
     * @return false for free text
     */
    boolean guidedEnd() {
        return guidedEnd;
    }

    private boolean guidedEnd;

    /**
     * Whether a guided output is a whole value that nothing but whitespace could extend: the
     * generation ends there (whether or not an end token is allowed, with ignore_eos say).
     *
     * @return false for free text
     */
    boolean guideFinished() {
        return guide != null && guide.finished();
    }

    /** What ends a guided output: EOS (unless ignored) and the request's stop tokens. */
    private Set<Integer> ends(Set<Integer> eos) {
        if (params.stopTokenIds().isEmpty()) {
            return params.ignoreEos() ? Set.of() : eos;
        }
        Set<Integer> all = new java.util.HashSet<>(params.stopTokenIds());
        if (!params.ignoreEos()) {
            all.addAll(eos);
        }
        return all;
    }

    private void adjust(float[] logits, Set<Integer> eos) {
        int n = logits.length;
        if (generated < params.minTokens()) {
            if (!params.ignoreEos()) {
                for (int id : eos) {
                    if (id < n) {
                        logits[id] = Float.NEGATIVE_INFINITY;
                    }
                }
            }
            for (int id : params.stopTokenIds()) {
                if (id < n) {
                    logits[id] = Float.NEGATIVE_INFINITY;
                }
            }
        }
        if (!params.adjustsLogits()) {
            return;
        }
        for (Map.Entry<Integer, Double> e : params.logitBias().entrySet()) {
            if (e.getKey() < n) {
                logits[e.getKey()] += e.getValue().floatValue();
            }
        }
        double r = params.repetitionPenalty();
        if (r != 1) {
            for (int id = seen.nextSetBit(0); id >= 0 && id < n; id = seen.nextSetBit(id + 1)) {
                logits[id] = (float) (logits[id] > 0 ? logits[id] / r : logits[id] * r);
            }
        }
        double f = params.frequencyPenalty();
        double p = params.presencePenalty();
        if (f != 0 || p != 0) {
            for (Map.Entry<Integer, Integer> e : counts.entrySet()) {
                if (e.getKey() < n) {
                    logits[e.getKey()] -= (float) (f * e.getValue() + p);
                }
            }
        }
    }

    private int choose(float[] logits) {
        if (params.isGreedy()) {
            return argmax(logits);
        }
        int n = logits.length;
        double t = params.temperature();
        float max = logits[argmax(logits)];
        boolean all = (params.topK() == 0 || params.topK() >= n) && params.topP() >= 1;
        if (all) {
            // no truncation: draw from the whole tempered softmax, no sort
            double[] p = new double[n];
            double sum = 0;
            for (int i = 0; i < n; i++) {
                p[i] = minP(Math.exp((logits[i] - max) / t));
                sum += p[i];
            }
            return draw(p, n, sum, null);
        }
        // the candidates, most likely first (lowest id first on ties), as primitive keys: a boxed
        // sort of a 128k vocabulary per token would cost milliseconds on the engine's one thread
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            int bits = Float.floatToIntBits(logits[i]);
            int sortable = bits ^ ((bits >> 31) & 0x7fffffff); // ascending int order = ascending float order
            keys[i] = ((long) ~sortable << 32) | (i & 0xffffffffL);
        }
        java.util.Arrays.sort(keys);
        int keep = params.topK() > 0 ? Math.min(params.topK(), n) : n;
        int[] order = new int[keep];
        double[] p = new double[keep];
        double sum = 0;
        for (int i = 0; i < keep; i++) {
            order[i] = (int) keys[i];
            p[i] = minP(Math.exp((logits[order[i]] - max) / t));
            sum += p[i];
        }
        // top-p: the smallest prefix of the sorted candidates whose probability reaches top_p
        int cut = keep;
        if (params.topP() < 1) {
            double acc = 0;
            for (int i = 0; i < keep; i++) {
                acc += p[i] / sum;
                if (acc >= params.topP()) {
                    cut = i + 1;
                    break;
                }
            }
        }
        double total = 0;
        for (int i = 0; i < cut; i++) {
            total += p[i];
        }
        return draw(p, cut, total, order);
    }

    /**
     * min-p: a probability relative to the most likely token's (which is 1 here, the logits being
     * taken from their maximum), 0 below {@code min_p}.
     */
    private double minP(double relative) {
        return relative < params.minP() ? 0 : relative;
    }

    private int draw(double[] p, int n, double total, int[] order) {
        double u = random.nextDouble() * total;
        for (int i = 0; i < n; i++) {
            u -= p[i];
            if (u < 0) {
                return order == null ? i : order[i];
            }
        }
        return order == null ? n - 1 : order[n - 1];
    }

    static int argmax(float[] row) {
        int best = 0;
        for (int i = 1; i < row.length; i++) {
            if (row[i] > row[best]) {
                best = i;
            }
        }
        return best;
    }
}
