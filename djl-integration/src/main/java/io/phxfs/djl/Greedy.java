package io.phxfs.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import java.util.Objects;

/**
 * Greedy generation (argmax at each step) with a {@link CausalLmBlock}: with a KV cache, the
 * prompt is computed once and each step feeds one token; without, each step recomputes the
 * whole sequence. Both give the same tokens (ties in the argmax go to the lowest id).
 */
public final class Greedy {
    private final CausalLmBlock block;

    /**
     * Generation with a block.
     *
     * @param block a Phoenix causal LM block
     */
    public Greedy(CausalLmBlock block) {
        this.block = Objects.requireNonNull(block);
    }

    /**
     * Generation with the block of a model loaded through the {@code phoenix} zoo or
     * {@link PhoenixBlockFactory}.
     *
     * @param model the DJL model
     * @return a generator
     * @throws IllegalArgumentException when the model's block is not a Phoenix causal LM
     */
    public static Greedy of(Model model) {
        Block b = model.getBlock();
        if (b instanceof CausalLmBlock c) {
            return new Greedy(c);
        }
        throw new IllegalArgumentException("model " + model.getName() + " has block "
                + (b == null ? "null" : b.getClass().getName()) + ", not a Phoenix causal LM");
    }

    /**
     * The result of a generation.
     *
     * @param tokens the generated ids, without the prompt
     * @param nanos the time the generation took
     */
    public record Result(long[] tokens, long nanos) {
        /**
         * Generated tokens per second.
         *
         * @return tokens/s, 0 for none
         */
        public double tokensPerSecond() {
            return nanos == 0 || tokens.length == 0 ? 0 : tokens.length * 1e9 / nanos;
        }
    }

    /**
     * Generates {@code count} tokens after {@code prompt}.
     *
     * @param prompt the prompt's ids, at least one
     * @param count how many tokens to generate, {@code >= 0}
     * @param useCache whether to keep keys and values between steps
     * @return the generated ids
     * @throws IllegalArgumentException for an empty prompt, a negative count or ids outside the vocabulary
     */
    public Result generate(long[] prompt, int count, boolean useCache) {
        if (prompt.length == 0) {
            throw new IllegalArgumentException("generation needs at least one prompt token");
        }
        if (count < 0) {
            throw new IllegalArgumentException("token count " + count + " < 0");
        }
        long t0 = System.nanoTime();
        long[] out = new long[count];
        try (NDManager m = block.manager.newSubManager(); KvCache cache = useCache ? block.newCache() : null) {
            long[] seq = prompt.clone();
            long[] feed = prompt;
            for (int i = 0; i < count; i++) {
                try (NDManager step = m.newSubManager()) {
                    NDArray logits = block.logits(step.create(useCache ? feed : seq), cache);
                    long next = argmax(logits.get(logits.getShape().get(0) - 1).toFloatArray());
                    out[i] = next;
                    seq = java.util.Arrays.copyOf(seq, seq.length + 1);
                    seq[seq.length - 1] = next;
                    feed = new long[] {next};
                }
            }
        }
        return new Result(out, System.nanoTime() - t0);
    }

    /**
     * The index of the largest value, the lowest on ties.
     *
     * @param row logits
     * @return the argmax
     */
    static long argmax(float[] row) {
        int best = 0;
        for (int i = 1; i < row.length; i++) {
            if (row[i] > row[best]) {
                best = i;
            }
        }
        return best;
    }
}
