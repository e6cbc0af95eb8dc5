package io.phxfs.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix kv}: the KV-cache tier (kvcache-tier). The commands' fields and signatures name
 * no kvcache type: the module is optional to the CLI ({@code requires static}), and picocli
 * reflects over these classes for every command line.
 */
@Command(name = "kv", mixinStandardHelpOptions = true,
        description = "The KV-cache tier: benchmark it, inspect a cache directory.",
        subcommands = {KvCommand.Bench.class, KvCommand.Stats.class})
final class KvCommand {
    /** {@code phoenix kv bench}. */
    @Command(name = "bench", mixinStandardHelpOptions = true,
            description = {"Store and retrieve throughput of the disk tier against raw Phoenix file I/O of the same bytes.",
                    "Both run in the same run, alternating; then the time to look up a 128k-token prompt. Progress on stderr."})
    static final class Bench implements Callable<Integer> {
        @Option(names = "--layout", defaultValue = "llama-3.1-8b",
                description = "KV layout preset: llama-3.1-8b (32 MiB per 256-token chunk), llama-3.1-70b, qwen2.5-7b, "
                        + "deepseek-v3, tiny-llama (default: ${DEFAULT-VALUE}).")
        String layout;

        @Option(names = "--chunks", defaultValue = "32", description = "Chunks of 256 tokens per run (default: ${DEFAULT-VALUE}).")
        int chunks;

        @Option(names = "--dir", description = "A directory on the disk to measure, created when missing (default:"
                + " java.io.tmpdir). The run's files go into a subdirectory phoenix-kv-bench-N, removed afterwards and on"
                + " Ctrl-C.")
        Path dir;

        @Option(names = "--keep", description = "Keep the last run's chunks in DIR/phoenix-kv-bench-N/tier, for"
                + " phoenix kv stats (the raw file and the lookup test's files are removed).")
        boolean keep;

        @ArgGroup(exclusive = true)
        TargetOptions target = new TargetOptions();

        @Option(names = "--repeat", defaultValue = "3", description = "Runs of each measurement; the median is reported (default: ${DEFAULT-VALUE}).")
        int repeat;

        @Option(names = "--fsync", defaultValue = "file",
                description = "Disk tier fsync policy: none, file, full (default: ${DEFAULT-VALUE}); the raw write is synced alike: its file once unless none, and its directory too with full.")
        String fsync;

        @Option(names = "--io-threads", defaultValue = "4",
                description = "The engine's io_threads: chunks moved at once (default: ${DEFAULT-VALUE}).")
        int ioThreads;

        @Option(names = "--redis", paramLabel = "URL",
                description = "Also compare the Redis tier with plain Lettuce SET/GET of the same bytes on this server.")
        String redis;

        @Option(names = "--json", description = "Print one JSON object on stdout.")
        boolean json;

        @Option(names = "--quiet", description = "No progress lines on stderr.")
        boolean quiet;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            return new KvBench(this).run();
        }
    }

    /** {@code phoenix kv stats DIR}. */
    @Command(name = "stats", mixinStandardHelpOptions = true,
            description = "What a disk-tier directory holds: chunks, bytes, models, damaged files and leftovers. Changes nothing.")
    static final class Stats implements Callable<Integer> {
        @Parameters(paramLabel = "DIR", description = "The cache directory (local_disk).")
        Path dir;

        @Option(names = "--json", description = "Print one JSON object on stdout.")
        boolean json;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            return KvBench.stats(this);
        }
    }
}
