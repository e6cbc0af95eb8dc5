package io.phxfs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix djl-run MODEL_DIR --ids 1,7,42 [--generate N] [--top K] [--json]}: loads a
 * Hugging Face checkpoint into DJL through Phoenix (the {@code phoenix:} model URL), prints the
 * top next tokens and, with {@code --generate}, greedily generated ids. The options and the JSON
 * shape are a contract.
 */
@Command(name = "djl-run", mixinStandardHelpOptions = true,
        description = {"Runs a Hugging Face checkpoint (GPT-2 or Llama: config.json and safetensors, single or sharded)"
                        + " in DJL's PyTorch engine, its weights loaded by Phoenix.",
                "Prints the top next tokens after --ids and, with --generate N, N greedily generated ids (KV cache),"
                        + " the load time and tokens/s (generated tokens per second with --generate, else input"
                        + " positions per second of the forward pass).",
                "The engine runs offline: libtorch from DJL_CACHE_DIR, PYTORCH_LIBRARY_PATH or the"
                        + " ai.djl.pytorch:pytorch-native-cpu jar on the class path.",
                "Exit status: 0 done; 2 invalid input (no checkpoint, unsupported model, ids outside the vocabulary);"
                        + " 1 other failures."})
final class DjlRunCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MODEL_DIR", description = "A Hugging Face checkpoint directory.")
    Path dir;

    @Option(names = "--ids", required = true, split = ",", paramLabel = "ID[,ID...]",
            description = "Input token ids, comma-separated.")
    long[] ids;

    @Option(names = "--generate", paramLabel = "N", defaultValue = "0", description = "Generate N tokens greedily (default 0).")
    int generate;

    @Option(names = "--top", paramLabel = "K", defaultValue = "5", description = "How many next tokens to show (default 5).")
    int top;

    @Option(names = "--json", description = "Print one JSON object on stdout: ids, logits (one row per input position),"
            + " top ([id, logit] pairs), generated, load_seconds, tokens_per_s.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (generate < 0) {
            throw new IllegalArgumentException("--generate " + generate + ": must be >= 0");
        }
        if (top < 1) {
            throw new IllegalArgumentException("--top " + top + ": must be >= 1");
        }
        if (!Files.isDirectory(dir)) {
            if (!Files.exists(dir)) {
                throw new NoSuchFileException(dir.toString(), null, "no such checkpoint directory");
            }
            throw new IllegalArgumentException(dir + ": not a directory (djl-run takes a checkpoint directory)");
        }
        requireDjl("djl-run");
        DjlRun.run(dir, ids, generate, top, json, spec.commandLine().getOut());
        return 0;
    }

    /** A jar built without DJL (phoenix-cli-nodjl.jar, the GPU machine's) says so, instead of a NoClassDefFoundError. */
    static void requireDjl(String command) {
        try {
            Class.forName("ai.djl.engine.Engine", false, DjlRunCommand.class.getClassLoader());
            Class.forName("io.phxfs.djl.DjlRuntime", false, DjlRunCommand.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalStateException(command + " needs DJL and djl-integration on the class path; this CLI was"
                    + " built without them (phoenix-cli-nodjl.jar): run samples/target/phoenix-cli.jar");
        }
    }
}
