package io.phxfs.cli;

import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.SafetensorsWriter;
import io.phxfs.safetensors.SafetensorsWriter.Spec;
import io.phxfs.safetensors.WeightLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Loads and initialises the header parser, the planner (Jackson among them) and the batch
 * path's native downcalls on a background thread while the main thread opens the device. In a fresh JVM that class
 * loading costs tens of milliseconds, a third of a 5 GB load at 50 GB/s; the model's own
 * header is still parsed inside the timed load.
 */
final class ParserWarmUp {
    private ParserWarmUp() {}

    static Thread start() {
        return Thread.ofPlatform().daemon().name("phoenix-warm-up").start(() -> {
            Path f = null;
            try {
                f = Files.createTempFile("phoenix-warm-up", ".safetensors");
                // enough tensors that the per-tensor parsing code is compiled, not interpreted
                List<Spec> specs = new java.util.ArrayList<>();
                for (int i = 0; i < 1024; i++) {
                    specs.add(new Spec("model.layers." + i + ".self_attn.q_proj.weight", Dtype.BF16, new long[] {4, 8}));
                }
                SafetensorsWriter.write(f, Map.of("format", "pt"), specs, (t, off, dst) -> {
                    while (dst.hasRemaining()) dst.put((byte) 0);
                });
                // a whole load into host memory, polled for progress as the real one is: the
                // batch path's downcalls, its waiter thread and the model's views get linked here
                WeightLoader.builder().toHost().mapHost(false).progress((done, total) -> { }).build()
                        .load(ModelFiles.open(f)).close();
            } catch (Exception | LinkageError e) {
                // a warm-up only: the real load reports any real problem
            } finally {
                if (f != null) {
                    try {
                        Files.deleteIfExists(f);
                    } catch (Exception ignored) {
                        // a temp file left behind is harmless
                    }
                }
            }
        });
    }
}
