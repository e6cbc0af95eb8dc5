package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;

/**
 * The compute dtypes of the blocks (float32, float16, bfloat16) and the casts between them,
 * through libtorch's C shim: DJL 0.36's JNI has no bfloat16 (it reports such arrays as
 * UNKNOWN and terminates the JVM when asked for the type), so no DJL operation that takes a
 * dtype (toType, softmax) ever sees a bfloat16 array; those run on float32 copies.
 */
final class Precision {
    private Precision() {
    }

    /** The compute dtypes a block runs in. */
    static boolean supported(DataType t) {
        return t == DataType.FLOAT32 || t == DataType.FLOAT16 || t == DataType.BFLOAT16;
    }

    /** Torch's name of a compute dtype. */
    static String torchName(DataType t) {
        return switch (t) {
            case FLOAT32 -> "float32";
            case FLOAT16 -> "float16";
            case BFLOAT16 -> "bfloat16";
            default -> throw new IllegalArgumentException("compute dtype " + t + ": float32, float16 or bfloat16");
        };
    }

    /** The compute dtype of a torch or config name ({@code bfloat16}, {@code float16}, {@code float32}, {@code bf16}, ...), or null. */
    static DataType fromName(String name) {
        if (name == null) {
            return null;
        }
        return switch (name.toLowerCase(java.util.Locale.ROOT).replace("torch.", "")) {
            case "float32", "fp32", "f32", "float" -> DataType.FLOAT32;
            case "float16", "fp16", "f16", "half" -> DataType.FLOAT16;
            case "bfloat16", "bf16" -> DataType.BFLOAT16;
            default -> null;
        };
    }

    /** Whether the array's elements are of {@code t} (asked of libtorch: DJL cannot tell bfloat16). */
    static boolean is(NDArray a, DataType t) {
        return TensorViews.torchDtype(a).equals(torchName(t));
    }

    /** {@code a} as {@code t}: itself when it is, else a converted copy in its manager. */
    static NDArray to(NDArray a, DataType t) {
        return is(a, t) ? a : TensorViews.convert(a, t);
    }

    /** Softmax over the last axis computed in float32 (as transformers' attention does), returned as {@code t}. */
    static NDArray softmax(NDArray scores, DataType t) {
        return to(to(scores, DataType.FLOAT32).softmax(-1), t);
    }
}
