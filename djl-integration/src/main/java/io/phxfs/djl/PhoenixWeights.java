package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import io.phxfs.core.Phoenix;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.TensorAllocator;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A checkpoint loaded by Phoenix and every tensor of it as a DJL array over the loaded memory
 * ({@link TensorViews#view}): one owner for both. It is attached to the manager it was made in,
 * so closing that manager (a DJL {@code Model} closes its manager) closes it: the arrays first,
 * then the Phoenix memory, exactly once. Using an array afterwards raises DJL's
 * IllegalStateException; {@link #get} on a closed instance raises one naming the checkpoint.
 */
public final class PhoenixWeights implements AutoCloseable {
    private final Path path;
    private final LoadedModel loaded;
    private final NDManager parent;
    private final NDManager manager;
    private final Map<String, NDArray> arrays;
    /** Every tensor loaded, released or not. */
    private final java.util.Set<String> names;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger releases = new AtomicInteger();
    private final String uid;

    private PhoenixWeights(Path path, LoadedModel loaded, NDManager parent) {
        this.path = path;
        this.loaded = loaded;
        this.parent = parent;
        this.manager = parent.newSubManager();
        Map<String, NDArray> m = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, LoadedTensor> e : loaded.tensors().entrySet()) {
                NDArray a = TensorViews.view(e.getValue(), manager);
                a.setName(e.getKey());
                m.put(e.getKey(), a);
            }
        } catch (RuntimeException e) {
            manager.close();
            throw e;
        }
        this.arrays = Collections.synchronizedMap(m);
        this.names = java.util.Set.copyOf(m.keySet());
        this.uid = "phoenix-weights-" + java.util.UUID.randomUUID();
        parent.attachInternal(uid, this);
    }

    /**
     * Loads a checkpoint ({@code .safetensors} file, model directory or index) into writable
     * host memory with the default loader and wraps every tensor.
     *
     * @param path the checkpoint
     * @param manager a PyTorch manager on the CPU; the weights close with it
     * @return the weights
     * @throws IOException when a file cannot be read
     */
    public static PhoenixWeights load(Path path, NDManager manager) throws IOException {
        return load(path, manager, defaultLoader());
    }

    /**
     * The loader {@link #load(Path, NDManager)} uses: each tensor read into host memory of its
     * own (writable, never a mapping), so that {@link #release} can free one tensor (say, bf16
     * weights once converted to float32). On the 2-core build machine this loaded a 1.7 GB
     * checkpoint 2-3x faster than one shared huge-page buffer, whose page faults stalled
     * (docs/benchmarks.md, issue 9).
     *
     * @return a new loader
     */
    public static WeightLoader defaultLoader() {
        return defaultLoaderBuilder().build();
    }

    /**
     * {@link #defaultLoader()}'s builder, for a load that also selects tensors.
     *
     * @return a builder of the default loader
     */
    public static WeightLoader.Builder defaultLoaderBuilder() {
        return WeightLoader.builder().into(TensorAllocator.perTensor(Phoenix.open().host()::allocate));
    }

    /**
     * Loads a checkpoint with {@code loader} and wraps every tensor. The loader must not map
     * host tensors read-only ({@code writable(true)}, or {@code mapHost(false)}): an array
     * over a read-only mapping would fault on its first write.
     *
     * @param path the checkpoint
     * @param manager a PyTorch manager on the device the loader loads into; the weights close with it
     * @param loader the loader (placement, selection, caller memory)
     * @return the weights
     * @throws IOException when a file cannot be read
     * @throws IllegalArgumentException when the load mapped host tensors read-only
     */
    public static PhoenixWeights load(Path path, NDManager manager, WeightLoader loader) throws IOException {
        Objects.requireNonNull(manager, "manager");
        DjlRuntime.pytorch();
        LoadedModel loaded = loader.load(path);
        try {
            if (loaded.hostMapped()) {
                throw new IllegalArgumentException(path + ": the loader mapped the files read-only; DJL arrays over "
                        + "them would fault on the first write. Use WeightLoader.builder().writable(true)");
            }
            return new PhoenixWeights(path, loaded, manager);
        } catch (RuntimeException e) {
            loaded.close();
            throw e;
        }
    }

    /**
     * Wraps an already loaded model; this instance then owns it and closes it.
     *
     * @param loaded a loaded model (not mapped read-only)
     * @param manager a PyTorch manager on the device it was loaded into
     * @return the weights
     */
    public static PhoenixWeights of(LoadedModel loaded, NDManager manager) {
        if (loaded.hostMapped()) {
            throw new IllegalArgumentException(loaded.model().path() + ": mapped read-only; load with writable(true)");
        }
        return new PhoenixWeights(loaded.model().path(), loaded, manager);
    }

    /**
     * The array of a tensor.
     *
     * @param name the tensor's name
     * @return its array
     * @throws IllegalArgumentException when the checkpoint has no such tensor
     * @throws IllegalStateException when closed
     */
    public NDArray get(String name) {
        checkOpen();
        NDArray a = arrays.get(name);
        if (a == null) {
            throw new IllegalArgumentException(path + ": no tensor \"" + name + "\""
                    + (contains(name) ? " (released)" : ""));
        }
        return a;
    }

    /**
     * Whether the checkpoint has (had, if released) a tensor of this name among those loaded.
     *
     * @param name the tensor's name
     * @return true when it has
     */
    public boolean contains(String name) {
        return names.contains(name);
    }

    /**
     * Every array by tensor name, in the checkpoint's order.
     *
     * @return an unmodifiable map
     * @throws IllegalStateException when closed
     */
    public Map<String, NDArray> arrays() {
        checkOpen();
        return Collections.unmodifiableMap(arrays);
    }

    /**
     * Closes one tensor's array and frees its memory now, where the memory is the tensor's own
     * (the default loader's per-tensor buffers); a tensor in a shared buffer keeps its memory
     * until {@link #close}. Either way the array is closed and the name is gone from
     * {@link #arrays()}. Releasing a released tensor does nothing.
     *
     * @param name the tensor's name
     * @return true when its memory was freed now
     * @throws IllegalArgumentException when the checkpoint has no such tensor
     */
    public boolean release(String name) {
        checkOpen();
        NDArray a = arrays.remove(name);
        if (a == null) {
            if (!names.contains(name)) {
                throw new IllegalArgumentException(path + ": no tensor \"" + name + "\"");
            }
            return false;
        }
        a.close(); // the array first: nothing may see the memory once it is freed
        return loaded.release(name);
    }

    /**
     * Every array, named after its tensor, in the checkpoint's order.
     *
     * @return a new list of the arrays
     */
    public NDList toNDList() {
        checkOpen();
        synchronized (arrays) {
            return new NDList(arrays.values());
        }
    }

    /**
     * The Phoenix load behind the arrays.
     *
     * @return the loaded model
     */
    public LoadedModel loaded() {
        return loaded;
    }

    /**
     * The checkpoint's path.
     *
     * @return the path it was loaded from
     */
    public Path path() {
        return path;
    }

    /**
     * Whether {@link #close} ran.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * How many times the Phoenix memory was released: 0 while open, 1 after any number of closes.
     *
     * @return the number of releases
     */
    public int releaseCount() {
        return releases.get();
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(path + ": the Phoenix weights were closed (the model was closed)");
        }
    }

    /** Closes the arrays, then releases the Phoenix memory; a second close does nothing. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            manager.close();
        } finally {
            parent.detachInternal(uid);
            releases.incrementAndGet();
            loaded.close();
        }
    }

    @Override
    public String toString() {
        return "PhoenixWeights[" + path + ", " + arrays.size() + " tensors" + (closed.get() ? ", closed]" : "]");
    }
}
