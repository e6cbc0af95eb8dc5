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
 * {@code phoenix djl-run MODEL_DIR --ids 1,7,42 [--generate N] [--top K] [--repeat N] [-v] [--json]}:
 * loads a Hugging Face checkpoint into DJL through Phoenix (the {@code phoenix:} model URL), prints
 * the top next tokens and, with {@code --generate}, greedily generated ids, and the speed: the
 * median of timed runs, flagged unreliable when they are too few, too short or too spread out.
 * The options and the JSON shape are a contract.
 */
@Command(name = "djl-run", mixinStandardHelpOptions = true,
        // by hand: picocli writes a required option that may be repeated twice, and its split
        // syntax once more ("--ids=ID[,ID...][,ID[,ID...]...] [--ids=...]..."); repeated --ids
        // still add up. DjlRunCommandTest checks that every option is here.
        customSynopsis = {"phoenix djl-run [-hvV] [--json] [--json-last-logits] [--device=N] [--dtype=TYPE]",
                "                       [--generate=N] [--repeat=N] [--top=K] --ids=ID[,ID...] MODEL_DIR"},
        description = {"Runs a Hugging Face checkpoint (GPT-2 or Llama: config.json and safetensors, single or sharded)"
                        + " in DJL's PyTorch engine, its weights loaded by Phoenix.",
                "Prints the top next tokens after --ids and, with --generate N, N greedily generated ids (KV cache),"
                        + " the load time and tokens/s (generated tokens per second with --generate, else input"
                        + " positions per second of the forward pass).",
                "tokens/s is the median of timed runs after a warm-up run, with the middle half of the runs beside it;"
                        + " it is flagged UNRELIABLE (with a warning on stderr, \"reliable\": false in the JSON) when the"
                        + " runs are fewer than " + DjlRunCommand.RELIABLE_RUNS + ", took under "
                        + DjlRunCommand.RELIABLE_SECONDS + " s in all, or their middle half spans over "
                        + DjlRunCommand.RELIABLE_SPREAD_PERCENT + "%% of the median.",
                "The engine runs offline: libtorch from DJL_CACHE_DIR, PYTORCH_LIBRARY_PATH or the"
                        + " ai.djl.pytorch:pytorch-native-cpu jar on the class path. DJL logs warnings and errors"
                        + " on stderr; -v adds its informational messages, -vv its debug ones (as does"
                        + " -Dorg.slf4j.simpleLogger.defaultLogLevel=info or debug given to java).",
                "Exit status: 0 done; 2 invalid input (no checkpoint, unsupported model, ids outside the vocabulary);"
                        + " 1 other failures."})
final class DjlRunCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MODEL_DIR", description = "A Hugging Face checkpoint directory.")
    Path dir;

    /** The speed is unreliable with fewer timed runs than this. */
    static final int RELIABLE_RUNS = 3;
    /** ... or when they took less than this in all (seconds) ... */
    static final double RELIABLE_SECONDS = 0.5;
    /** ... or when their middle half spans more than this percentage of the median. */
    static final int RELIABLE_SPREAD_PERCENT = 25;

    // hideParamSyntax: the label as written, not picocli's "ID[,ID...][,ID[,ID...]...]"
    @Option(names = "--ids", required = true, split = ",", paramLabel = "ID[,ID...]", hideParamSyntax = true,
            description = "Input token ids, comma-separated (e.g. 1,7,42); repeating the option adds more.")
    long[] ids;

    @Option(names = "--generate", paramLabel = "N", defaultValue = "0", description = "Generate N tokens greedily (default 0).")
    int generate;

    @Option(names = "--top", paramLabel = "K", defaultValue = "5", description = "How many next tokens to show (default 5).")
    int top;

    @Option(names = "--repeat", paramLabel = "N", description = "Timed runs of the measured work (the forward pass,"
            + " or the whole generation with --generate) after the warm-up run (default: at least 5 and 1 s of them,"
            + " none begun after 10 s).")
    Integer repeat;

    @Option(names = {"-v", "--verbose"}, description = "DJL's informational log on stderr; -vv its debug log too.")
    boolean[] verbose = new boolean[0];

    @Option(names = "--device", paramLabel = "N", description = "Load into GPU N's memory and compute there (default: the"
            + " CPU). Needs a CUDA libtorch with DJL's JNI built for it (README: On a GPU machine).")
    Integer device;

    @Option(names = "--dtype", paramLabel = "TYPE", defaultValue = "auto", description = "Compute dtype: auto (the"
            + " checkpoint's bf16/f16 on a GPU, float32 on the CPU), float32, bfloat16 or float16 (default: auto).")
    String dtype;

    @Option(names = "--json-last-logits", description = "With --json, the logits of the last input position only"
            + " (a long prompt's rows times a large vocabulary are a lot of JSON).")
    boolean lastLogitsOnly;

    @Option(names = "--json", description = "Print one JSON object on stdout: ids, logits (one row per input position),"
            + " top ([id, logit] pairs), generated, load_seconds, first_token_seconds (loadModel() to the first"
            + " token's logits), device, dtype, tokens_per_s (the median), tokens_per_s_min,"
            + " tokens_per_s_p25, tokens_per_s_p75, tokens_per_s_max, tokens_per_s_spread ((p75 - p25) / median),"
            + " timed_runs, timed_seconds, reliable and, when not, unreliable_because.")
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
        if (repeat != null && repeat < 1) {
            throw new IllegalArgumentException("--repeat " + repeat + ": must be >= 1");
        }
        if (!Files.isDirectory(dir)) {
            if (!Files.exists(dir)) {
                throw new NoSuchFileException(dir.toString(), null, "no such checkpoint directory");
            }
            throw new IllegalArgumentException(dir + ": not a directory (djl-run takes a checkpoint directory)");
        }
        if (device != null && device < 0) {
            throw new IllegalArgumentException("--device " + device + ": a GPU index >= 0");
        }
        if (!java.util.Set.of("auto", "float32", "bfloat16", "float16").contains(dtype)) {
            throw new IllegalArgumentException("--dtype " + dtype + ": auto, float32, bfloat16 or float16");
        }
        requireDjl("djl-run");
        logLevel(verbose.length);
        DjlRun.run(dir, ids, generate, top, repeat == null ? 0 : repeat, json, device, dtype, lastLogitsOnly,
                spec.commandLine().getOut(), spec.commandLine().getErr());
        return 0;
    }

    /** The system property through which slf4j-simple, the CLI's SLF4J binding, takes its level. */
    static final String LOG_LEVEL_PROPERTY = "org.slf4j.simpleLogger.defaultLogLevel";

    /**
     * The logger of DJL's CUDA probe, which simplelogger.properties sets to errors only: on a host
     * with a CUDA runtime but no usable driver it warns twice on every run ("Failed to detect GPU
     * count"), and the run goes on on the CPU, as the CLI's CPU libtorch would anyway. -v shows it.
     */
    static final String CUDA_PROBE_LOGGER = "org.slf4j.simpleLogger.log.ai.djl.util.cuda.CudaUtils";

    /**
     * -v: info, -vv: debug, for the SLF4J binding the CLI ships (simplelogger.properties: warn).
     * Before DJL's first logger: the binding reads its settings once per JVM. Without -v, a level
     * given to java (-Dorg.slf4j.simpleLogger.defaultLogLevel=...) stands.
     *
     * @return the level set, or null
     */
    static String logLevel(int verbosity) {
        if (verbosity <= 0) {
            return null;
        }
        String level = verbosity == 1 ? "info" : "debug";
        System.setProperty(LOG_LEVEL_PROPERTY, level);
        System.setProperty(CUDA_PROBE_LOGGER, level);
        return level;
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
