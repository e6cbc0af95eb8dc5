package io.phxfs.serving.engine;

import java.util.SplittableRandom;

/**
 * Chooses a request's next token from the logits: argmax (lowest id on ties, as torch's argmax)
 * at temperature 0, else a draw from the tempered softmax restricted by top-k, then top-p.
 * One per request, so that a seed gives the same tokens whatever else is running.
 */
final class Sampler {
    private final SamplingParams params;
    private final SplittableRandom random;

    Sampler(SamplingParams params) {
        this.params = params;
        this.random = params.seed() != null ? new SplittableRandom(params.seed()) : new SplittableRandom();
    }

    int next(float[] logits) {
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
                p[i] = Math.exp((logits[i] - max) / t);
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
            p[i] = Math.exp((logits[order[i]] - max) / t);
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
