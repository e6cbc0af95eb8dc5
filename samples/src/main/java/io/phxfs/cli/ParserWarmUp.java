package io.phxfs.cli;

import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.WeightLoader;
import java.nio.file.Path;

/**
 * Runs the load path on small generated models in host memory (once on one of a thousand tensors,
 * then repeatedly on models in each writer's layout until the device is open), on a background
 * thread while the main thread opens the device (CUDA context and pinned slots: hundreds of
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
            // two shards and an index, as most checkpoints come, written as transformers and
            // safetensors write them (WarmUpModels: code compiled for another shape of file is
            // thrown back to the interpreter when the user's file differs); enough tensors that
            // the per-tensor parsing code is compiled, not interpreted
            Path big = java.nio.file.Files.createDirectory(dir.resolve("big"));
            Path f = WarmUpModels.write(big, WarmUpModels.Style.TRANSFORMERS, 2, 512, true);
            // a whole load of the directory (as users name it) into host memory, polled for
            // progress as the real one is: the batch path's downcalls, its waiter thread and
            // the model's views get linked here
            WeightLoader warmLoader = WeightLoader.builder().toHost().mapHost(false).progress((done, total) -> { }).build();
            warmLoader.load(big).close();
            // the per-tensor code (header reader, layout check, plan) again, so that the JIT
            // compiles it before a checkpoint of thousands of tensors needs it; bounded in time,
            // since the caller waits for the warm-up when the device opens faster than this
            long until = System.nanoTime() + 100_000_000L;
            for (int i = 0; i < 16 && System.nanoTime() < until; i++) {
                warmLoader.plan(io.phxfs.safetensors.ModelFiles.open(big));
            }
            // What runs once a load (locating the files through the index, the early reads' set-up:
            // data extents, opening the files and asking how much of each is cached, filling and
            // submitting the batch, its completion coming back from the library's thread, the
            // checks and the model's assembly) stays interpreted after a single warm-up load.
            // Loads of small models in each writer's shape, repeated while the device opens, have
            // the JIT compile that code for all of them first.
            WarmUpModels.Style[] styles = WarmUpModels.Style.values();
            Path[] small = new Path[styles.length];
            for (int k = 0; k < styles.length; k++) {
                small[k] = java.nio.file.Files.createDirectory(dir.resolve("small-" + k));
                WarmUpModels.write(small[k], styles[k], 2, 3, true);
            }
            long repeatUntil = System.nanoTime() + REPEAT_NANOS;
            for (int i = 0; i < 4000 && !deviceOpen.get() && System.nanoTime() < repeatUntil; i++) {
                warmLoader.load(small[i % small.length]).close();
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
