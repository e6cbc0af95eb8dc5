/**
 * Phoenix-loaded weights as DJL models. {@link io.phxfs.djl.TensorViews} wraps loaded tensors as
 * {@code NDArray}s without copying; {@link io.phxfs.djl.PhoenixWeights} owns a checkpoint's
 * arrays and memory; {@link io.phxfs.djl.SafetensorsNDList} replaces {@code NDList.decode};
 * {@link io.phxfs.djl.PhoenixBlockFactory}, the {@code phoenix:} URL scheme and
 * {@link io.phxfs.djl.PhoenixModelZoo} make {@code Criteria} load Hugging Face checkpoints;
 * {@link io.phxfs.djl.Gpt2Block} and {@link io.phxfs.djl.LlamaBlock} run them and
 * {@link io.phxfs.djl.Greedy} generates with a KV cache.
 */
package io.phxfs.djl;
