package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * Rotary position embeddings in Hugging Face's rotate-half layout: the cos and sin tables of
 * given positions (from {@link RotaryFrequencies}, in transformers' float32 operations, then
 * cast to the activations' dtype) and their application to queries or keys.
 *
 * @param frequencies the inverse frequencies and the factor cos and sin are scaled by
 * @param dtype the activations' dtype, which the tables are cast to
 */
record Rotary(RotaryFrequencies frequencies, DataType dtype) {
    /**
     * The width of the rotated part of a head.
     *
     * @return twice the number of frequencies
     */
    int width() {
        return 2 * frequencies.invFreq().length;
    }

    /**
     * The cos and sin rows of the positions {@code at}, each {@link #width()} wide, as {@code shape}
     * with that width last.
     *
     * @param m where to create them
     * @param at the positions
     * @param shape the tables' shape
     * @return cos and sin
     */
    NDArray[] tables(NDManager m, int[] at, Shape shape) {
        float[] invFreq = frequencies.invFreq();
        float scaling = frequencies.scaling();
        int half = invFreq.length;
        int width = 2 * half;
        float[] cos = new float[at.length * width];
        float[] sin = new float[at.length * width];
        for (int r = 0; r < at.length; r++) {
            for (int i = 0; i < half; i++) {
                // as transformers computes it: float32 position times float32 frequency
                float angle = (float) at[r] * invFreq[i];
                // transformers scales them in float32 (YaRN's attention factor; 1 otherwise)
                float c = (float) Math.cos(angle) * scaling;
                float sn = (float) Math.sin(angle) * scaling;
                cos[r * width + i] = c;
                cos[r * width + half + i] = c;
                sin[r * width + i] = sn;
                sin[r * width + half + i] = sn;
            }
        }
        return new NDArray[] {Precision.to(m.create(cos, shape), dtype), Precision.to(m.create(sin, shape), dtype)};
    }

    /**
     * {@code x [.., T, d]} rotated by tables of its positions: the tables' width of each head
     * rotates (all of it but with a {@code partial_rotary_factor}), the rest passes.
     *
     * @param x queries or keys, head dimension last
     * @param cos the cos table, broadcastable to x's rotated part
     * @param sin the sin table
     * @return the rotated array
     */
    static NDArray apply(NDArray x, NDArray cos, NDArray sin) {
        int last = x.getShape().dimension() - 1;
        long d = x.getShape().get(last);
        long rd = cos.getShape().get(cos.getShape().dimension() - 1);
        if (rd < d) {
            NDList parts = x.split(new long[] {rd}, last);
            return apply(parts.get(0), cos, sin).concat(parts.get(1), last);
        }
        NDList parts = x.split(new long[] {d / 2}, last);
        NDArray rotated = parts.get(1).neg().concat(parts.get(0), last);
        return x.mul(cos).add(rotated.mul(sin));
    }
}
