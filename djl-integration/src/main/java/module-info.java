/**
 * Phoenix-loaded safetensors weights as DJL models: tensors as {@code NDArray}s over Phoenix
 * memory without copying (every dtype, through libtorch's C shim where DJL's JNI has none), a
 * drop-in for {@code NDList.decode}, a {@code phoenix} model zoo and {@code phoenix://} model
 * URLs (also {@code phoenix:s3://bucket/prefix/}, the weights read straight from S3), GPT-2
 * and Llama blocks built from DJL operations, and TorchScript parameter replacement. It calls
 * libtorch through java.lang.foreign, so it needs native access.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // DJL's jars are automatic modules (Automatic-Module-Name)
module io.phxfs.djl {
    requires transitive io.phxfs.safetensors;
    requires transitive ai.djl.api;
    requires ai.djl.pytorch_engine;
    requires com.fasterxml.jackson.core;

    exports io.phxfs.djl;

    provides ai.djl.repository.zoo.ZooProvider with io.phxfs.djl.PhoenixZooProvider;
    provides ai.djl.repository.RepositoryFactory with io.phxfs.djl.PhoenixRepositoryFactory;
}
