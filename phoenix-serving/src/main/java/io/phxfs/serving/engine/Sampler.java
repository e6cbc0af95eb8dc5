package io.phxfs.serving.engine;

import java.util.Arrays;
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
        Integer[] order = null;
        int keep = n;
        if (params.topK() > 0 && params.topK() < n) {
            keep = params.topK();
        }
        // the candidates, most likely first; a full sort is cheap next to a forward pass
        order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> logits[b] != logits[a] ? Float.compare(logits[b], logits[a]) : Integer.compare(a, b));
        double max = logits[order[0]];
        double[] p = new double[keep];
        double sum = 0;
        for (int i = 0; i < keep; i++) {
            p[i] = Math.exp((logits[order[i]] - max) / params.temperature());
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
        double u = random.nextDouble() * total;
        for (int i = 0; i < cut; i++) {
            u -= p[i];
            if (u < 0) {
                return order[i];
            }
        }
        return order[cut - 1];
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
