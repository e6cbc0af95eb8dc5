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
    /**
     * The longest the once-a-load code is repeated for. It stops sooner when the device is
     * open: on the H200 a CUDA context and the pinned pool take 200-400 ms, which this uses;
     * without an accelerator the caller is ready at once and waits for no repetition.
     */
    private static final long REPEAT_NANOS = 250_000_000L;

    private final java.util.concurrent.atomic.AtomicBoolean deviceOpen = new java.util.concurrent.atomic.AtomicBoolean();
    private Thread thread;

    private ParserWarmUp() {
    }

    static ParserWarmUp start() {
        ParserWarmUp w = new ParserWarmUp();
        w.thread = Thread.ofPlatform().daemon().name("phoenix-warm-up").start(w::run);
        return w;
    }

    /**
     * Waits for the warm-up to end. Called in a finally block: the warm-up is short (tens of
     * milliseconds), and a command that fails at once (a wrong --device) would otherwise exit
     * while this daemon thread is still writing its model under java.io.tmpdir.
     */
    @Override
    public void close() {
        deviceOpen.set(true); // the caller is ready: no more repetitions
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

    private void run() {
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
            // What runs once a load (locating the files through the index, the early reads' set-up:
            // data extents, opening the files and asking how much of each is cached, filling and
            // submitting the batch, its completion coming back from the library's thread, the
            // checks and the model's assembly) stays interpreted after a single warm-up load, and
            // the user's load then paid for it in locate, allocate and read (H200: 1.3, 0.8 and
            // about 1 ms of a 100 ms load). Loads of a two-shard model of two tensors a shard,
            // repeated while the device opens, have the JIT compile that code first.
            Path small = dir.resolve("small");
            java.nio.file.Files.createDirectory(small);
            StringBuilder smallIndex = new StringBuilder("{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
            for (int shard = 1; shard <= 2; shard++) {
                String name = "model-0000" + shard + "-of-00002.safetensors";
                List<Spec> specs = new java.util.ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    String t = "model.layers." + shard + "." + i + ".weight";
                    specs.add(new Spec(t, Dtype.BF16, new long[] {64, 64}));
                    smallIndex.append(shard + i == 1 ? "" : ", ").append('"').append(t).append("\": \"").append(name).append('"');
                }
                SafetensorsWriter.write(small.resolve(name), Map.of("format", "pt"), specs, (t, off, dst) -> {
                    while (dst.hasRemaining()) dst.put((byte) 1);
                });
            }
            java.nio.file.Files.writeString(small.resolve("model.safetensors.index.json"), smallIndex.append("}}"));
            long repeatUntil = System.nanoTime() + REPEAT_NANOS;
            for (int i = 0; i < 4000 && !deviceOpen.get() && System.nanoTime() < repeatUntil; i++) {
                warmLoader.load(small).close();
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
