package io.phxfs.djl;

import ai.djl.Model;
import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtSymbolBlock;
import ai.djl.util.Pair;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.Placement;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * The TorchScript path: a TorchScript model's parameters replaced by tensors that Phoenix loaded
 * from safetensors, for users who have TorchScript models and keep their weights as safetensors.
 * Load the model with {@code optOption("trainParam", "true")} (otherwise libtorch makes its
 * parameters inference tensors, which cannot be replaced). A parameter whose tensor has the same
 * dtype (one DJL maps) then aliases the Phoenix memory (no copy); another dtype (bf16 weights
 * into a float32 model, say) is converted into the parameter's own memory by libtorch.
 */
public final class TorchScriptWeights {
    private TorchScriptWeights() {
    }

    /**
     * What {@link #replace} did.
     *
     * @param weights the Phoenix weights the parameters now use (they close with the model)
     * @param aliased parameters that now point into Phoenix memory
     * @param converted parameters whose values were converted into their own memory
     */
    public record Result(PhoenixWeights weights, List<String> aliased, List<String> converted) {
    }

    /**
     * Replaces every parameter of a TorchScript model by the tensor of the same name.
     *
     * @param model a TorchScript model loaded by DJL's PyTorch engine with trainParam=true
     * @param safetensors a .safetensors file, model directory or index file
     * @return what was replaced
     * @throws IOException when a file cannot be read
     */
    public static Result replace(Model model, Path safetensors) throws IOException {
        return replace(model, safetensors, UnaryOperator.identity());
    }

    /**
     * Replaces every parameter of a TorchScript model by the tensor {@code names} maps its name to.
     *
     * @param model a TorchScript model loaded by DJL's PyTorch engine with trainParam=true
     * @param safetensors a .safetensors file, model directory or index file
     * @param names parameter name (as TorchScript's named_parameters gives it) to tensor name
     * @return what was replaced
     * @throws IOException when a file cannot be read
     * @throws IllegalArgumentException when a parameter has no tensor or a tensor's shape differs
     * @throws IllegalStateException when the parameters cannot be replaced (not loaded with trainParam=true)
     */
    public static Result replace(Model model, Path safetensors, UnaryOperator<String> names) throws IOException {
        Block block = model.getBlock();
        if (!(block instanceof PtSymbolBlock ts)) {
            throw new IllegalArgumentException("model " + model.getName() + " is not a TorchScript model (block "
                    + (block == null ? "null" : block.getClass().getName()) + ")");
        }
        List<Pair<String, Parameter>> params = new ArrayList<>();
        ts.getDirectParameters().forEach(params::add);
        for (Pair<String, Parameter> p : params) {
            // DJL freezes the parameters of a model loaded without trainParam=true: libtorch then
            // made them inference tensors, and replacing one aborts the process (checked here, first)
            if (!p.getValue().requiresGradient()) {
                throw new IllegalStateException("parameter " + p.getKey() + " of " + model.getName()
                        + " is frozen: load the TorchScript model with optOption(\"trainParam\", \"true\") (a model"
                        + " loaded without it has inference tensors, which cannot be replaced) and do not freeze it");
            }
        }
        PhoenixWeights w = PhoenixWeights.load(safetensors, model.getNDManager());
        List<String> tensorNames = new ArrayList<>();
        try {
            for (Pair<String, Parameter> p : params) {
                String tensorName = Objects.requireNonNull(names.apply(p.getKey()), "names mapped " + p.getKey() + " to null");
                if (!w.contains(tensorName)) {
                    throw new IllegalArgumentException(safetensors + ": no tensor \"" + tensorName + "\" for parameter "
                            + p.getKey());
                }
                long[] want = TensorViews.shape(p.getValue().getArray());
                long[] have = w.loaded().tensor(tensorName).orElseThrow().shape();
                if (!Arrays.equals(want, have)) {
                    throw new IllegalArgumentException(safetensors + ": tensor \"" + tensorName + "\" has shape "
                            + Arrays.toString(have) + ", parameter " + p.getKey() + " " + Arrays.toString(want));
                }
                tensorNames.add(tensorName);
            }
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
        List<String> aliased = new ArrayList<>();
        List<String> converted = new ArrayList<>();
        for (int i = 0; i < params.size(); i++) {
            String name = params.get(i).getKey();
            NDArray param = params.get(i).getValue().getArray();
            LoadedTensor t = w.loaded().tensor(tensorNames.get(i)).orElseThrow();
            boolean sameType = TensorViews.torchDtype(param).equals(t.dtype().torchName().orElse(""));
            try {
                if (sameType && TensorViews.djlType(t.dtype()) != null && t.target() == Placement.HOST
                        && t.nbytes() > 0 && t.nbytes() <= Integer.MAX_VALUE) {
                    MemorySegment s = t.segment().orElseThrow();
                    ByteBuffer view = s.asByteBuffer().order(ByteOrder.nativeOrder());
                    param.set(view); // torch set_: the parameter's storage becomes the Phoenix memory
                    aliased.add(name);
                } else {
                    TorchShim.get().copy(((PtNDArray) param).getHandle(), ((PtNDArray) w.get(tensorNames.get(i))).getHandle());
                    converted.add(name);
                }
            } catch (EngineException | IllegalStateException e) {
                if (aliased.isEmpty()) {
                    w.close(); // nothing points into it yet; otherwise it stays, and closes with the model
                }
                throw new IllegalStateException("parameter " + name + " of " + model.getName()
                        + " cannot be replaced (load the TorchScript model with optOption(\"trainParam\", \"true\")): "
                        + e.getMessage(), e);
            }
        }
        return new Result(w, List.copyOf(aliased), List.copyOf(converted));
    }
}
