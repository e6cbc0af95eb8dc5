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
 * Runs the load path on small generated models on a background thread, so that a fresh JVM has
 * linked libphoenix's downcalls and compiled the parser, the planner and the batch path before
 * the user's load runs them: on first use they cost milliseconds each, several percent of a 5 GB
 * load at 50 GB/s. The user's own model is not touched here: its header is parsed inside the
 * timed load.
 *
 * <p>It starts with the command line, before picocli builds the CLI's model (about 0.25 s on the
 * 2-core build machine: picocli's classes are Java 5 class files, which the JDK's AOT cache does
 * not keep), and a device load's warm-up goes on while the device opens. A host load has no
 * device to wait for, so its warm-up is one load of a small model the way the user's load will
 * go (mapped, or copied), and the planner's loop only while the command is not yet ready: the
 * device warm-up, run before a host load, made the command 0.4-0.5 s longer than no warm-up at
 * all on that machine (docs/benchmarks.md, perf-3 session 20).
 */
final class ParserWarmUp implements AutoCloseable {
    /** What the user's load will do, as far as the command line says before it is parsed. */
    enum Kind {
        /** Onto a device: the whole warm-up, repeated while the device opens. */
        DEVICE,
        /** Into host memory, the files mapped. */
        HOST_MAPPED,
        /** Into host memory, copied (--copy, --direct, --buffered). */
        HOST_COPY
    }

    /**
     * The longest the once-a-load code is repeated for. It stops sooner when the device is
     * open: on the H200 a CUDA context and the pinned pool take 200-400 ms, which this uses;
     * without an accelerator the caller is ready at once and waits for no repetition.
     */
    private static final long REPEAT_NANOS = 250_000_000L;

    /** Warm-ups started in this JVM: a test's evidence that a command adopts the one started early. */
    private static final java.util.concurrent.atomic.AtomicInteger STARTED = new java.util.concurrent.atomic.AtomicInteger();

    private final Kind kind;
    /** The command is ready for its load (the device is open): no more repetitions. */
    private final java.util.concurrent.atomic.AtomicBoolean ready = new java.util.concurrent.atomic.AtomicBoolean();
    /** The load turned out to go to host memory: the device steps not yet begun are skipped. */
    private volatile boolean hostTarget;
    private Thread thread;

    private ParserWarmUp(Kind kind) {
        this.kind = kind;
    }

    static ParserWarmUp start(Kind kind) {
        STARTED.incrementAndGet();
        ParserWarmUp w = new ParserWarmUp(kind);
        w.thread = Thread.ofPlatform().daemon().name("phoenix-warm-up").start(w::run);
        return w;
    }

    /**
     * The warm-up for {@code phoenix load ARGS}, judged from the raw arguments before picocli
     * parses them (a wrong guess costs only warmth, never correctness): a host load where
     * {@code --host} or {@code --copy} is named (with a device too, the command refuses the
     * contradiction), or where no device is named and the machine
     * has no NVIDIA device node (the CLI then defaults to host memory); else a device load.
     */
    static Kind kindOf(String[] loadArgs, boolean acceleratorNode) {
        boolean host = false;
        boolean copy = false;
        boolean device = false;
        for (String a : loadArgs) {
            switch (a) {
                case "--host" -> host = true;
                case "--copy" -> {
                    host = true; // host tensors only (with a device named, the command refuses it)
                    copy = true;
                }
                case "--direct", "--buffered" -> copy = true;
                default -> device |= a.equals("--device") || a.startsWith("--device=") || a.equals("--devices")
                        || a.startsWith("--devices=");
            }
        }
        if (device && !host) {
            return Kind.DEVICE;
        }
        if (host || !acceleratorNode) {
            return copy ? Kind.HOST_COPY : Kind.HOST_MAPPED;
        }
        return Kind.DEVICE;
    }

    /** The NVIDIA driver's device node, as the launcher looks for it: where a load defaults to device 0. */
    static boolean acceleratorNode() {
        return java.nio.file.Files.exists(Path.of("/dev/nvidiactl"));
    }

    /** How many warm-ups this JVM has started. */
    static int started() {
        return STARTED.get();
    }

    /**
     * Waits for the warm-up to end; {@code deviceTarget} false says the load goes to host
     * memory, and the device steps not yet begun are skipped. Called in a finally block: the
     * warm-up is short (tens of milliseconds), and a command that fails at once (a wrong
     * --device) would otherwise exit while this daemon thread is still writing its model under
     * java.io.tmpdir. A second call waits for nothing.
     */
    void close(boolean deviceTarget) {
        if (!deviceTarget) {
            hostTarget = true;
        }
        ready.set(true); // the caller is ready: no more repetitions
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

    /** {@link #close(boolean)} of a command that never reached its load (a usage error). */
    @Override
    public void close() {
        close(false);
    }

    private void run() {
        Path dir = null;
        try {
            if (kind == Kind.DEVICE) {
                Phoenix.open().prelinkDeviceCalls(); // allocation and registration of the model's buffer
            } else {
                Phoenix.open();
            }
            dir = TempFiles.createDirectory("phoenix-warm-up");
            // two shards and an index, as most checkpoints come, written as transformers and
            // safetensors write them (WarmUpModels: code compiled for another shape of file is
            // thrown back to the interpreter when the user's file differs); enough tensors that
            // the per-tensor parsing code is compiled, not interpreted
            Path big = java.nio.file.Files.createDirectory(dir.resolve("big"));
            Path f = WarmUpModels.write(big, WarmUpModels.Style.TRANSFORMERS, 2, 512, true);
            // a whole load of the directory (as users name it), polled for progress as the real
            // one is: the downcalls of its path, its threads and the model's views get linked
            // here. A device load's reads go through the batch path, as a host copy's do; a
            // mapped host load maps the files while their headers are parsed (EarlyMapping).
            // (Mapped as the user's load decides it: after asking how much of each file is cached.)
            WeightLoader.Builder builder = WeightLoader.builder().toHost();
            if (kind != Kind.HOST_MAPPED) {
                builder.mapHost(false);
            }
            WeightLoader warmLoader = builder.progress((done, total) -> { }).build();
            warmLoader.load(big).close();
            // the per-tensor code (header reader, layout check, plan) again, so that the JIT
            // compiles it before a checkpoint of thousands of tensors needs it; bounded in time,
            // since the caller waits for the warm-up when the device opens faster than this. A
            // host load waits for nothing else: the loop ends as soon as the command is ready.
            long until = System.nanoTime() + 100_000_000L;
            for (int i = 0; i < 16 && System.nanoTime() < until && !(kind != Kind.DEVICE && ready.get()) && !hostTarget; i++) {
                warmLoader.plan(io.phxfs.safetensors.ModelFiles.open(big));
            }
            if (kind != Kind.DEVICE || hostTarget) {
                return;
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
            for (int i = 0; i < 4000 && !ready.get() && System.nanoTime() < repeatUntil; i++) {
                warmLoader.load(small[i % small.length]).close();
            }
            if (hostTarget) {
                return;
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
