package io.phxfs.djl;

import ai.djl.ndarray.NDArray;

/**
 * A projection as a block applies it: the weight {@code [in, out]} (a view of the checkpoint's
 * {@code [out, in]}) and its bias, or null.
 *
 * @param w the weight, {@code [in, out]}
 * @param b the bias {@code [out]}, or null
 */
record Linear(NDArray w, NDArray b) {
    /**
     * {@code x w + b}.
     *
     * @param x rows {@code [.., in]}
     * @return {@code [.., out]}
     */
    NDArray apply(NDArray x) {
        NDArray y = x.matMul(w);
        return b == null ? y : y.add(b);
    }
}
