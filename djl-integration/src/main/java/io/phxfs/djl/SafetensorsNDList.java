package io.phxfs.djl;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.nio.file.Path;

/**
 * A drop-in for DJL's {@code NDList.decode(manager, bytes)} on safetensors checkpoints: a
 * {@code .safetensors} file, a model directory (single or sharded) or an index file into an
 * {@link NDList} whose arrays keep their tensors' names. Unlike {@code NDList.decode}, it does
 * not read the file into the Java heap, takes files over 2 GiB, and handles bf16, fp8 and the
 * other dtypes DJL's JNI cannot create (see {@link TensorViews}).
 *
 * <p>The arrays alias memory Phoenix loaded into; it is released when {@code manager} closes
 * (or when the arrays' {@link PhoenixWeights} is closed, see {@link #loadWeights}).
 */
public final class SafetensorsNDList {
    private SafetensorsNDList() {
    }

    /**
     * Loads every tensor of a checkpoint into writable host memory as arrays of {@code manager}.
     *
     * @param path a {@code .safetensors} file, model directory or index file
     * @param manager a PyTorch manager on the CPU; it owns the memory from now on
     * @return the arrays in checkpoint order, named after their tensors
     * @throws IOException when a file cannot be read
     */
    public static NDList load(Path path, NDManager manager) throws IOException {
        return PhoenixWeights.load(path, manager).toNDList();
    }

    /**
     * Loads a checkpoint with a loader of the caller's (placement, selection, caller memory).
     *
     * @param path a {@code .safetensors} file, model directory or index file
     * @param manager a PyTorch manager on the device the loader loads into
     * @param loader the loader; it must not map host tensors read-only
     * @return the arrays in checkpoint order, named after their tensors
     * @throws IOException when a file cannot be read
     */
    public static NDList load(Path path, NDManager manager, WeightLoader loader) throws IOException {
        return PhoenixWeights.load(path, manager, loader).toNDList();
    }

    /**
     * Loads a checkpoint and returns the owner of its arrays, to close them (and release the
     * memory) before the manager closes.
     *
     * @param path a {@code .safetensors} file, model directory or index file
     * @param manager a PyTorch manager on the CPU
     * @return the weights
     * @throws IOException when a file cannot be read
     */
    public static PhoenixWeights loadWeights(Path path, NDManager manager) throws IOException {
        return PhoenixWeights.load(path, manager);
    }
}
