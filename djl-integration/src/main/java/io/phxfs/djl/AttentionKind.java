package io.phxfs.djl;

import ai.djl.ndarray.NDArray;

/**
 * How a layer's attention turns products of queries and keys into scores, and which keys it
 * sees: the scale ({@code 1 / sqrt(head_dim)}, or Gemma's {@code query_pre_attn_scalar ** -0.5}),
 * Gemma 2's {@code attn_logit_softcapping} ({@code cap * tanh(s / cap)}), and a sliding window
 * (a query at position p sees the keys at positions p - window + 1 .. p, as transformers'
 * {@code sliding_window_overlay}).
 *
 * @param scale what the products are multiplied by, or 0 for {@code 1 / sqrt(head_dim)} (divided,
 *        as the Llama family's references compute it)
 * @param softcap the scores' soft cap, or 0 for none
 * @param window the sliding window in positions, or 0 for full causal attention
 */
record AttentionKind(double scale, double softcap, int window) {
    /** Full causal attention scaled by {@code 1 / sqrt(head_dim)}: the Llama family's. */
    static final AttentionKind STANDARD = new AttentionKind(0, 0, 0);

    AttentionKind {
        if (scale < 0 || softcap < 0 || window < 0 || Double.isNaN(scale) || Double.isNaN(softcap)) {
            throw new IllegalArgumentException("attention scale " + scale + ", softcap " + softcap + ", window " + window);
        }
    }

    /**
     * Standard scaling over a sliding window, or full attention.
     *
     * @param window the window, 0 for none
     * @return the kind
     */
    static AttentionKind window(int window) {
        return window == 0 ? STANDARD : new AttentionKind(0, 0, window);
    }

    /**
     * The scores of a prefill's products of queries and keys (before the mask).
     *
     * @param products {@code q k^T}
     * @param headDim the head dimension
     * @return the scaled (and capped) scores
     */
    NDArray scores(NDArray products, long headDim) {
        return cap(scale == 0 ? products.div(Math.sqrt(headDim)) : products.mul(scale));
    }

    /**
     * A decode step's queries before their products: scaled beforehand where the scale is the
     * standard one (one multiply of B rows instead of one of every score), else as they are.
     *
     * @param q the queries
     * @param headDim the head dimension
     * @return the queries to multiply by the keys
     */
    NDArray stepQueries(NDArray q, long headDim) {
        return scale == 0 ? q.mul(1 / Math.sqrt(headDim)) : q;
    }

    /**
     * A decode step's scores from the products of {@link #stepQueries} and the keys.
     *
     * @param products the products
     * @return the scores
     */
    NDArray stepScores(NDArray products) {
        return cap(scale == 0 ? products : products.mul(scale));
    }

    private NDArray cap(NDArray s) {
        return softcap == 0 ? s : s.div(softcap).tanh().mul(softcap);
    }

    /**
     * The first key position a query at {@code position} sees.
     *
     * @param position the query's position
     * @return 0 without a window
     */
    int firstVisible(int position) {
        return window == 0 ? 0 : Math.max(0, position - window + 1);
    }
}
