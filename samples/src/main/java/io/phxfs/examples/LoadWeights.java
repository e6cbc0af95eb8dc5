package io.phxfs.examples;

import io.phxfs.core.Phoenix;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.LoadedTensor;
import io.phxfs.safetensors.TensorSelector;
import io.phxfs.safetensors.WeightLoader;
import java.io.IOException;
import java.nio.file.Path;

/** Loads the safetensors tensors whose names match a regex into device 0's memory. */
public final class LoadWeights {
    /** {@code LoadWeights MODEL REGEX}: MODEL is a .safetensors file, an index or a directory. */
    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: LoadWeights MODEL TENSOR_REGEX");
            System.exit(2);
        }
        WeightLoader loader = WeightLoader.builder()
                .toDevice(Phoenix.open().device(0))         // or .toHost(), or .placement(t -> ...)
                .select(TensorSelector.regex(args[1]))
                .build();
        try (LoadedModel m = loader.load(Path.of(args[0]))) { // closing frees the memory
            for (LoadedTensor t : m.tensors().values()) {
                long devicePointer = t.address();           // what a kernel is handed
                System.out.println(t.name() + " " + t.dtype() + " " + t.nbytes() + " bytes at 0x"
                        + Long.toHexString(devicePointer));
            }
        }
    }
}
