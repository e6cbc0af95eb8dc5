package io.phxfs.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.nn.BlockFactory;
import ai.djl.pytorch.engine.PtNDManager;
import io.phxfs.safetensors.TensorSelector;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * DJL's hook for building a model's block: reads a Hugging Face checkpoint directory
 * (config.json and safetensors, single or sharded) with Phoenix and returns the block of its
 * architecture, its parameters the loaded tensors. Name it in a {@code Criteria} with
 * {@code optArgument("blockFactory", PhoenixBlockFactory.class.getName())} and
 * {@code optOption("hasParameter", "false")} (there are no {@code .params} files), or use a
 * {@code phoenix://} URL, which sets both ({@code phoenix:s3://bucket/prefix/} also sets
 * {@link #CHECKPOINT}: see {@link PhoenixRepositoryFactory}).
 *
 * <p>A model on a GPU ({@code optDevice(Device.gpu(n))}) has its weights loaded into that
 * GPU's memory and wrapped there, and the block computes there in the checkpoint's dtype: that needs a CUDA
 * libtorch with DJL's JNI built for it (see the README: On a GPU machine).
 *
 * <p>Supported {@code model_type}s: {@code gpt2} ({@link Gpt2Block}) and the Llama family,
 * {@code llama}, {@code mistral}, {@code phi3}, {@code qwen2} and {@code qwen3} ({@link LlamaBlock}), and Gemma,
 * {@code gemma}, {@code gemma2}, {@code gemma3_text} and {@code gemma3}'s text model ({@link GemmaBlock}). The weights close with the model.
 */
public final class PhoenixBlockFactory implements BlockFactory {
    private static final long serialVersionUID = 1L;

    /**
     * Criteria argument: {@code float32} (default) or {@code bfloat16}, the precision of
     * Llama's rotary frequencies; bfloat16 reproduces transformers running the model in bf16.
     */
    public static final String ROPE_DTYPE = "ropeDtype";

    /**
     * Criteria argument: the compute dtype, {@code auto} (default: the checkpoint's dtype on a
     * GPU, float32 on the CPU), {@code float32}, {@code bfloat16} or {@code float16}.
     */
    public static final String DTYPE = "dtype";

    /**
     * Criteria argument: the checkpoint to load instead of the model's directory: an
     * {@code s3://bucket/prefix/} URL (read with the environment's S3 settings), a local path,
     * or a {@code java.nio.file.Path} of any file system (an {@code S3FileSystem} of its own
     * settings, say). A {@code phoenix:s3://} URL sets it; config.json and the safetensors are
     * then read from there, the weights through {@code WeightLoader}'s parallel ranged GETs.
     */
    public static final String CHECKPOINT = "checkpoint";

    /** A factory; DJL instantiates it by class name. */
    public PhoenixBlockFactory() {
    }

    @Override
    public Block newBlock(Model model, Path modelPath, Map<String, ?> arguments) throws IOException {
        try {
            return blockFor(model, modelPath, arguments);
        } catch (IOException | RuntimeException | Error e) {
            // DJL's model loader made this model for us and drops it when we throw: nobody else
            // can close it, and its manager (native memory) would wait for the garbage collector,
            // which logs "Model: NAME was not closed explicitly" after the error
            model.close();
            throw e;
        }
    }

    private Block blockFor(Model model, Path modelPath, Map<String, ?> arguments) throws IOException {
        if (!(model.getNDManager() instanceof PtNDManager)) {
            throw new IllegalArgumentException("Phoenix blocks need DJL's PyTorch engine; the model's engine is "
                    + model.getNDManager().getEngine().getEngineName() + " (optEngine(\"PyTorch\"))");
        }
        Object rope = arguments.get(ROPE_DTYPE);
        if (rope != null && !"float32".equals(rope) && !"bfloat16".equals(rope)) {
            throw new IllegalArgumentException("argument " + ROPE_DTYPE + "=" + rope + ": float32 or bfloat16");
        }
        Object dt = arguments.get(DTYPE);
        DataType dtype = null;
        if (dt != null && !"auto".equals(dt)) {
            dtype = Precision.fromName(dt.toString());
            if (dtype == null) {
                throw new IllegalArgumentException("argument " + DTYPE + "=" + dt + ": auto, float32, bfloat16 or float16");
            }
        }
        return newBlock(checkpoint(arguments.get(CHECKPOINT), modelPath), model, "bfloat16".equals(rope), dtype);
    }

    /** The checkpoint a {@link #CHECKPOINT} argument names, else the model's directory. */
    static Path checkpoint(Object argument, Path modelPath) {
        if (argument == null) {
            return modelPath;
        }
        if (argument instanceof Path p) {
            return p;
        }
        String s = argument.toString();
        if (s.isBlank()) {
            throw new IllegalArgumentException("argument " + CHECKPOINT + " is empty (an s3:// URL or a checkpoint directory)");
        }
        return io.phxfs.safetensors.s3.S3FileSystemProvider.pathOf(s);
    }

    /**
     * Loads a checkpoint directory into a block of {@code model}'s manager.
     *
     * @param dir the checkpoint directory
     * @param model the DJL model the weights belong to
     * @return the architecture's block
     * @throws IOException when a file cannot be read
     */
    public static CausalLmBlock newBlock(Path dir, Model model) throws IOException {
        return newBlock(dir, model, false);
    }

    /**
     * Loads a checkpoint directory into a block of {@code model}'s manager.
     *
     * @param dir the checkpoint directory
     * @param model the DJL model the weights belong to
     * @param bf16Rope Llama: rotary frequencies rounded to bf16 (see {@link LlamaBlock})
     * @return the architecture's block
     * @throws IOException when a file cannot be read
     */
    public static CausalLmBlock newBlock(Path dir, Model model, boolean bf16Rope) throws IOException {
        return newBlock(dir, model, bf16Rope, null);
    }

    /**
     * Refuses a GPU the engine cannot compute on, before any tensor is made there: libtorch built
     * for the CPU would otherwise print its C++ stack ("Cannot initialize CUDA without ATen_cuda
     * library") and fail deep inside the first tensor. ({@code torch::cuda::is_available()} is
     * what DJL's JNI reports as the CUDA capability.)
     */
    static void requireGpu(ai.djl.engine.Engine engine, ai.djl.Device device) {
        if (!engine.hasCapability(ai.djl.engine.StandardCapabilities.CUDA)) {
            throw new IllegalArgumentException(device + ": this " + engine.getEngineName() + " engine ("
                    + engine.getVersion() + ") cannot compute on a GPU here (its libtorch is built without CUDA, or"
                    + " finds no GPU); leave out the device (--device) to compute on the CPU, or use a CUDA build of"
                    + " libtorch on a machine with a GPU");
        }
        // the count is left to the weight loader (libphoenix names a device it has not), not to
        // Engine.getGpuCount: that asks the CUDA runtime through JNA, which may find none beside
        // a libtorch that computes on the GPU fine
    }

    /**
     * Loads a checkpoint directory into a block of {@code model}'s manager that computes in {@code dtype}.
     *
     * @param dir the checkpoint directory
     * @param model the DJL model the weights belong to
     * @param bf16Rope Llama: rotary frequencies rounded to bf16 (see {@link LlamaBlock})
     * @param dtype the compute dtype, or null for the default (the checkpoint's on a GPU, float32 on the CPU)
     * @return the architecture's block
     * @throws IOException when a file cannot be read
     */
    public static CausalLmBlock newBlock(Path dir, Model model, boolean bf16Rope, DataType dtype) throws IOException {
        if (io.phxfs.safetensors.s3.S3FileSystemProvider.isS3(dir)) {
            // S3's own answer (404 NoSuchBucket, 403 AccessDenied...), naming the URL, rather
            // than a bare "no config.json" from Files.isDirectory's false
            java.nio.file.Files.readAttributes(dir, java.nio.file.attribute.BasicFileAttributes.class);
        }
        HfConfig file = HfConfig.read(dir);
        // Gemma 3's multimodal checkpoints are computed as their text model
        HfConfig config = file.modelType().equals("gemma3") ? gemma3Text(file) : file;
        String type = config.modelType();
        if (!type.equals("gpt2") && !LlamaFamily.TYPES.contains(type) && !GemmaFamily.TYPES.contains(type)) {
            throw new IllegalArgumentException(config.file() + ": model_type \"" + type
                    + "\" is not supported (" + String.join(", ", SUPPORTED) + ")");
        }
        ai.djl.Device device = model.getNDManager().getDevice();
        if (device.isGpu()) {
            requireGpu(model.getNDManager().getEngine(), device);
        }
        // a model on a GPU gets its weights read straight into that GPU's memory
        WeightLoader.Builder builder = device.isGpu() ? WeightLoader.builder().toDevice(device.getDeviceId())
                : PhoenixWeights.defaultLoaderBuilder();
        if (config != file) {
            // a multimodal checkpoint computed as its text model: its vision tower (0.4B parameters
            // in Gemma 3's) is not read at all
            builder.select(TensorSelector.of(PhoenixBlockFactory::textModelTensor));
        }
        WeightLoader loader = builder.build();
        PhoenixWeights weights = PhoenixWeights.load(dir, model.getNDManager(), loader);
        try {
            DataType dt = dtype != null ? dtype : device.isGpu() ? checkpointDtype(file, weights) : DataType.FLOAT32;
            if (type.equals("gpt2")) {
                return new Gpt2Block(weights, config, model.getNDManager(), dt);
            }
            return GemmaFamily.TYPES.contains(type) ? new GemmaBlock(weights, config, model.getNDManager(), bf16Rope, dt)
                    : new LlamaBlock(weights, config, model.getNDManager(), bf16Rope, dt);
        } catch (RuntimeException e) {
            weights.close();
            throw e;
        }
    }

    /** Whether a multimodal checkpoint's tensor belongs to its text model (not the vision tower or its projector). */
    static boolean textModelTensor(String name) {
        for (String vision : new String[] {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
            "model.multi_modal_projector."}) {
            if (name.startsWith(vision)) {
                return false;
            }
        }
        return true;
    }

    /**
     * A multimodal Gemma 3's text model as Gemma3ForConditionalGeneration computes it: its
     * {@code text_config}, the head tied as the top level says (default true), and no final
     * softcap, which the multimodal model never applies.
     */
    private static HfConfig gemma3Text(HfConfig file) {
        java.util.Map<String, Object> overrides = new java.util.HashMap<>();
        overrides.put("tie_word_embeddings", file.bool("tie_word_embeddings", true));
        overrides.put("final_logit_softcapping", null);
        return file.section("text_config", "gemma3_text", overrides);
    }

    /** The model types a block computes, sorted. */
    static final java.util.List<String> SUPPORTED = java.util.stream.Stream.concat(java.util.stream.Stream.concat(
            java.util.stream.Stream.of("gpt2", "gemma3"), LlamaFamily.TYPES.stream()), GemmaFamily.TYPES.stream()).sorted().toList();

    /**
     * The dtype the checkpoint was written in: config.json's {@code dtype} (transformers 5) or
     * {@code torch_dtype} (4), else its first floating tensor's; float32 for anything else.
     */
    static DataType checkpointDtype(HfConfig config, PhoenixWeights weights) {
        DataType d = Precision.fromName(config.string("dtype").orElse(config.string("torch_dtype").orElse(null)));
        if (d == null) {
            for (NDArray a : weights.arrays().values()) {
                d = Precision.fromName(TensorViews.torchDtype(a));
                if (d != null) {
                    break;
                }
            }
        }
        return d == null ? DataType.FLOAT32 : d;
    }

}
