package io.phxfs.cli;

import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.SafetensorsWriter;
import io.phxfs.safetensors.SafetensorsWriter.Spec;
import io.phxfs.safetensors.WeightLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Runs the load path once, on a small generated model in host memory, on a background thread
 * while the main thread opens the device (CUDA context and pinned slots: hundreds of
 * milliseconds). In a fresh JVM the parser, the planner, the batch path's downcalls and its
 * waiter thread cost milliseconds each on first use, several percent of a 5 GB load at 50 GB/s.
 * The user's own model is not touched here: its header is parsed inside the timed load.
 */
final class ParserWarmUp implements AutoCloseable {
    private final Thread thread;

    private ParserWarmUp(Thread thread) {
        this.thread = thread;
    }

    static ParserWarmUp start() {
        return new ParserWarmUp(Thread.ofPlatform().daemon().name("phoenix-warm-up").start(ParserWarmUp::run));
    }

    /**
     * Waits for the warm-up to end. Called in a finally block: the warm-up is short (tens of
     * milliseconds), and a command that fails at once (a wrong --device) would otherwise exit
     * while this daemon thread is still writing its model under java.io.tmpdir.
     */
    @Override
    public void close() {
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private static void run() {
        Path dir = null;
        try {
            Phoenix.open().prelinkDeviceCalls(); // allocation and registration of the model's buffer
            dir = TempFiles.createDirectory("phoenix-warm-up");
            // two shards and an index, as most checkpoints come: the index's JSON reader is
            // linked here too (cold, it cost the first real load 16-27 ms before any read began)
            StringBuilder index = new StringBuilder("{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
            Path f = null;
            for (int shard = 1; shard <= 2; shard++) {
                String name = "model-0000" + shard + "-of-00002.safetensors";
                // enough tensors that the per-tensor parsing code is compiled, not interpreted
                List<Spec> specs = new java.util.ArrayList<>();
                for (int i = (shard - 1) * 512; i < shard * 512; i++) {
                    String t = "model.layers." + i + ".self_attn.q_proj.weight";
                    specs.add(new Spec(t, Dtype.BF16, new long[] {4, 8}));
                    index.append(i == 0 ? "" : ", ").append('"').append(t).append("\": \"").append(name).append('"');
                }
                f = dir.resolve(name);
                SafetensorsWriter.write(f, Map.of("format", "pt"), specs, (t, off, dst) -> {
                    while (dst.hasRemaining()) dst.put((byte) 0);
                });
            }
            java.nio.file.Files.writeString(dir.resolve("model.safetensors.index.json"), index.append("}}"));
            // a whole load of the directory (as users name it) into host memory, polled for
            // progress as the real one is: the batch path's downcalls, its waiter thread and
            // the model's views get linked here
            WeightLoader warmLoader = WeightLoader.builder().toHost().mapHost(false).progress((done, total) -> { }).build();
            warmLoader.load(dir).close();
            // the per-tensor code (header reader, layout check, plan) again, so that the JIT
            // compiles it before a checkpoint of thousands of tensors needs it; bounded in time,
            // since the caller waits for the warm-up when the device opens faster than this
            long until = System.nanoTime() + 100_000_000L;
            for (int i = 0; i < 16 && System.nanoTime() < until; i++) {
                warmLoader.plan(io.phxfs.safetensors.ModelFiles.open(dir));
            }
            // a load adds one request per 64 MiB: filling a batch is interpreted code until it
            // has run a few thousand times (1 ms for 80 requests in a fresh JVM)
            try (RegisteredBuffer buf = Phoenix.open().host().allocate(4096);
                 PhxFile file = PhxFile.open(f, OpenMode.READ);
                 IoBatch batch = IoBatch.create(4096)) {
                // the open file is all the rest needs: the directory goes now, not at the end
                TempFiles.delete(dir);
                for (int i = 0; i < 4096; i++) {
                    batch.add(IoRequest.read(file, 0, buf, 0, 64));
                }
                batch.run();
            }
        } catch (Exception | LinkageError e) {
            // a warm-up only: the real load reports any real problem
        } finally {
            if (dir != null) {
                TempFiles.delete(dir);
            }
        }
    }
}
