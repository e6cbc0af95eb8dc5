package io.phxfs.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * The training run the launcher records a JDK AOT cache from ({@code -XX:AOTCacheOutput}, JEP
 * 514/515): it runs the CLI's main paths once on a small generated model so that their classes
 * are loaded, linked and profiled ahead of time. A fresh JVM spends 15–30 ms on first use of
 * the load path (parser, planner, batch, progress, downcalls); the background warm-up moves
 * most of that beside the device open, and the cache took a further 1–2 ms off a 5 GB load on
 * the H200 besides shortening start-up. The launcher runs it under the fake connector, so it
 * needs no device.
 */
@Command(name = "train-startup", hidden = true,
        description = "Runs the CLI's main paths once on a small generated model (the launcher's AOT-cache training run).")
final class TrainStartupCommand implements Callable<Integer> {
    @Override
    public Integer call() throws IOException {
        // listed: Ctrl-C while the launcher records the cache must not leave the model behind
        Path dir = TempFiles.createDirectory("phoenix-train");
        PrintWriter sink = new PrintWriter(Writer.nullWriter());
        try {
            String model = dir.resolve("model").toString();
            String sharded = dir.resolve("sharded").toString();
            // thousands of small tensors in two shards: the per-tensor code (index and header
            // readers, layout check, plan, views) is hot in the training, so that its profile in
            // the cache lets the JIT compile it early in a fresh JVM (JEP 515)
            String many = dir.resolve("many").toString();
            List<String[]> runs = List.of(
                    new String[] {"gen-model", model, "--size", "24m", "--hidden", "512", "--intermediate", "1024", "--vocab", "4096"},
                    new String[] {"gen-model", sharded, "--size", "8m", "--hidden", "256", "--intermediate", "512", "--vocab", "2048",
                            "--shards", "2"},
                    new String[] {"gen-model", many, "--size", "24m", "--hidden", "256", "--heads", "8", "--kv-heads", "8",
                            "--experts", "128", "--expert-intermediate", "16", "--vocab", "1024", "--shards", "2"},
                    new String[] {"info"},
                    new String[] {"load", many, "--host", "--json"},
                    new String[] {"load", many, "--device", "0", "--json"},
                    new String[] {"load", model, "--device", "0", "--json"},
                    new String[] {"load", model, "--device", "0", "--checksums"},
                    new String[] {"load", sharded, "--device", "0", "--only", "layers\\.0\\..*", "--json"},
                    new String[] {"load", model, "--host", "--json"},
                    new String[] {"load", model, "--host", "--copy", "--checksums", "--json"},
                    new String[] {"load-bench", model + "/model.safetensors", "--device", "0", "--repeat", "1", "--no-dd", "--json", "--quiet"},
                    new String[] {"bench", "--size", "32m", "--dir", dir.toString(), "--no-sweep", "--repeat", "1", "--json", "--quiet"});
            for (String[] args : runs) {
                int rc = PhoenixCli.run(sink, sink, args);
                if (rc != 0) {
                    System.err.println("phoenix train-startup: '" + String.join(" ", args) + "' exited " + rc);
                    return 1;
                }
            }
            return 0;
        } finally {
            TempFiles.delete(dir);
        }
    }
}
