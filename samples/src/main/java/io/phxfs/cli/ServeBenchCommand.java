package io.phxfs.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix serve-bench MODEL_DIR}: vLLM's serving benchmark for {@code phoenix serve}.
 * The work is in {@link io.phxfs.cli.servebench.ServeBench}; this class names none of its types.
 */
@Command(name = "serve-bench", mixinStandardHelpOptions = true,
        description = {"Benchmarks phoenix serve as clients see it: N streamed requests from C concurrent clients, each a"
                + " shared system prompt of P tokens plus a distinct suffix, against a server it starts for each KV setting:"
                + " the tier off, the memory tier, the disk tier after a server restart, and Redis (with --redis).",
                "Prints time to first token (p50, p99), inter-token latency, output throughput and the prefix hit rate per"
                        + " setting, and the ratios to the tier off; --json prints one object. Progress on stderr."})
public final class ServeBenchCommand implements Callable<Integer> {
    /** The checkpoint. */
    @Parameters(index = "0", paramLabel = "MODEL_DIR", description = "A checkpoint phoenix serve runs (with tokenizer.json).")
    public Path model;

    /** Requests per setting. */
    @Option(names = "--requests", defaultValue = "16", description = "Requests per setting (default: ${DEFAULT-VALUE}).")
    public int requests;

    /** Concurrent clients. */
    @Option(names = "--concurrency", defaultValue = "8", split = ",",
            description = "Concurrent clients; a list runs each (default: ${DEFAULT-VALUE}).")
    public List<Integer> concurrency;

    /** Shared prefix tokens. */
    @Option(names = "--prefix-tokens", defaultValue = "1800", description = "Tokens of the shared system prompt (default: ${DEFAULT-VALUE}).")
    public int prefixTokens;

    /** Distinct suffix tokens. */
    @Option(names = "--suffix-tokens", defaultValue = "32", description = "Tokens after it, distinct per request (default: ${DEFAULT-VALUE}).")
    public int suffixTokens;

    /** Tokens generated per request. */
    @Option(names = "--max-tokens", defaultValue = "32", description = "Tokens generated per request (default: ${DEFAULT-VALUE}).")
    public int maxTokens;

    /** The settings to run. */
    @Option(names = "--tiers", defaultValue = "off,memory,disk", split = ",",
            description = "Settings to run, in order: off, memory, disk, redis (default: ${DEFAULT-VALUE}; redis needs --redis).")
    public List<String> tiers;

    /** A Redis server for the redis setting. */
    @Option(names = "--redis", paramLabel = "URL", description = "redis://host:port for the redis setting.")
    public String redis;

    /** The servers' GPU. */
    @Option(names = "--device", paramLabel = "N", description = "Run the servers on GPU N (phoenix serve --device N; default: the CPU).")
    public Integer device;

    /** Where the disk tier lives. */
    @Option(names = "--dir", description = "Directory for the disk tier's files (default: a new one under java.io.tmpdir, removed after).")
    public Path dir;

    /** JSON output. */
    @Option(names = "--json", description = "Print one JSON object on stdout.")
    public boolean json;

    /** No progress. */
    @Option(names = "--quiet", description = "No progress lines on stderr.")
    public boolean quiet;

    /** picocli's view of the command. */
    @Spec
    public CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        return io.phxfs.cli.servebench.ServeBench.run(this);
    }
}
