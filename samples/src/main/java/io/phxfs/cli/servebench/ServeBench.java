package io.phxfs.cli.servebench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.cli.ServeBenchCommand;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The work of {@code phoenix serve-bench}: for each KV setting, a {@code phoenix serve} of its
 * own (a child JVM on the same class path, as a user runs it), warmed so that the setting's
 * tier holds the shared prefix (for the disk and Redis settings the server is then restarted,
 * so the hits come from the tier, not from memory), then the measured requests.
 */
public final class ServeBench {
    private final ServeBenchCommand o;
    private final PrintWriter err;
    private final ObjectMapper json = new ObjectMapper();

    private ServeBench(ServeBenchCommand o) {
        this.o = o;
        this.err = o.spec.commandLine().getErr();
    }

    /**
     * Runs the benchmark the command describes.
     *
     * @param o the command's options
     * @return the exit status
     * @throws Exception when a server cannot be started or a request fails
     */
    public static int run(ServeBenchCommand o) throws Exception {
        return new ServeBench(o).run();
    }

    private void progress(String fmt, Object... args) {
        if (!o.quiet) {
            err.printf(Locale.ROOT, "[serve-bench] " + fmt + "%n", args);
            err.flush();
        }
    }

    private int run() throws Exception {
        if (o.requests < 1 || o.prefixTokens < 0 || o.suffixTokens < 1 || o.maxTokens < 1) {
            throw new IllegalArgumentException("--requests, --suffix-tokens and --max-tokens must be >= 1, --prefix-tokens >= 0");
        }
        for (int c : o.concurrency) {
            if (c < 1) {
                throw new IllegalArgumentException("--concurrency " + c + ": must be >= 1");
            }
        }
        for (String t : o.tiers) {
            if (!List.of("off", "memory", "disk", "redis").contains(t)) {
                throw new IllegalArgumentException("--tiers: unknown setting '" + t + "' (off, memory, disk, redis)");
            }
            if (t.equals("redis") && o.redis == null) {
                throw new IllegalArgumentException("--tiers redis needs --redis URL");
            }
        }
        JsonNode config = json.readTree(o.model.resolve("config.json").toFile());
        int vocab = config.path("vocab_size").asInt(0);
        if (vocab < 16) {
            throw new IllegalArgumentException(o.model.resolve("config.json") + ": no usable \"vocab_size\"");
        }
        Path work = Files.createTempDirectory("phoenix-serve-bench-");
        try {
            Path disk = o.dir != null ? o.dir : work.resolve("disk");
            int[] prefix = tokens(new SplittableRandom(1), o.prefixTokens, vocab);
            Map<String, List<Result>> results = new LinkedHashMap<>();
            for (String tier : o.tiers) {
                Path kv = kvConfig(work, tier, disk);
                List<Result> rs = new ArrayList<>();
                ServerProcess server = ServerProcess.start(o.model, kv, o.device, max(o.concurrency), o.requests, err, o.quiet);
                try {
                    // the first request compiles the JIT's paths and, for a tier, stores the prefix
                    progress("%s: warming up (%s)", tier, tier.equals("off") ? "JIT" : "stores the shared prefix");
                    Load.once(server.url(), warmPrompt(prefix, vocab), o.maxTokens);
                    boolean restart = tier.equals("disk") || tier.equals("redis");
                    for (int c : o.concurrency) {
                        if (restart) {
                            // before each run: the server keeps used prefixes resident, so that only
                            // a fresh process's first request reads the prefix from the tier
                            progress("%s: restarting the server, so that hits come from the tier", tier);
                            server.stop();
                            server = ServerProcess.start(o.model, kv, o.device, max(o.concurrency), o.requests, err, o.quiet);
                            // the restarted JVM warms its JIT on a prompt of its own (no shared prefix), so
                            // that the setting is measured as warm as the others
                            Load.once(server.url(), tokens(new SplittableRandom(99), o.suffixTokens, vocab), o.maxTokens);
                        }
                        progress("%s: %d requests, %d concurrent, %d+%d prompt tokens, %d generated", tier, o.requests, c,
                                o.prefixTokens, o.suffixTokens, o.maxTokens);
                        Result r = Load.run(server.url(), prompts(prefix, vocab, c), c, o.maxTokens);
                        r = r.named(tier, c);
                        progress("%s: %s", tier, r.summary());
                        rs.add(r);
                    }
                } finally {
                    server.stop();
                }
                results.put(tier, rs);
            }
            report(results);
        } finally {
            try (var s = Files.walk(work)) {
                for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
        return 0;
    }

    private static int max(List<Integer> l) {
        return l.stream().mapToInt(Integer::intValue).max().orElse(1);
    }

    private static int[] tokens(SplittableRandom r, int n, int vocab) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 8 + r.nextInt(vocab - 8); // the first ids of most vocabularies are special
        }
        return t;
    }

    private int[] warmPrompt(int[] prefix, int vocab) {
        int[] p = java.util.Arrays.copyOf(prefix, prefix.length + o.suffixTokens);
        System.arraycopy(tokens(new SplittableRandom(7), o.suffixTokens, vocab), 0, p, prefix.length, o.suffixTokens);
        return p;
    }

    /** The measured prompts: the shared prefix and a suffix of their own (seeded by the run, so each setting gets the same). */
    private List<int[]> prompts(int[] prefix, int vocab, int concurrency) {
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < o.requests; i++) {
            int[] p = java.util.Arrays.copyOf(prefix, prefix.length + o.suffixTokens);
            System.arraycopy(tokens(new SplittableRandom(1000L * concurrency + i), o.suffixTokens, vocab), 0, p, prefix.length,
                    o.suffixTokens);
            out.add(p);
        }
        return out;
    }

    private Path kvConfig(Path work, String tier, Path disk) throws IOException {
        String yaml = switch (tier) {
            case "off" -> null;
            case "memory" -> "local_cpu: true\nmax_local_cpu_size: 4\n";
            case "disk" -> "local_cpu: false\nlocal_disk: \"" + disk.toAbsolutePath() + "\"\nmax_local_disk_size: 20\nlocal_disk_min_free: 0\n";
            case "redis" -> "local_cpu: false\nremote_url: \"" + o.redis + "\"\n";
            default -> throw new IllegalArgumentException(tier);
        };
        if (yaml == null) {
            return null;
        }
        Path f = work.resolve(tier + ".yaml");
        Files.writeString(f, yaml);
        return f;
    }

    private void report(Map<String, List<Result>> results) throws IOException {
        PrintWriter out = o.spec.commandLine().getOut();
        Map<Integer, Result> off = new LinkedHashMap<>();
        results.getOrDefault("off", List.of()).forEach(r -> off.put(r.concurrency(), r));
        if (o.json) {
            ObjectNode root = json.createObjectNode();
            root.put("model", o.model.toString());
            root.put("requests", o.requests);
            root.put("prefix_tokens", o.prefixTokens);
            root.put("suffix_tokens", o.suffixTokens);
            root.put("max_tokens", o.maxTokens);
            ArrayNode runs = root.putArray("runs");
            for (List<Result> rs : results.values()) {
                for (Result r : rs) {
                    ObjectNode n = r.json(json);
                    Result base = off.get(r.concurrency());
                    if (base != null && !r.tier().equals("off")) {
                        n.put("ttft_p50_vs_off", round(r.ttftP50() / base.ttftP50()));
                        n.put("ttft_first_vs_off", round(r.firstTtft() / base.ttftP50()));
                        n.put("outputs_equal_to_off", r.sameOutputs(base));
                    }
                    runs.add(n);
                }
            }
            for (List<Result> rs : results.values()) {
                Result one = rs.stream().filter(r -> r.concurrency() == 1).findFirst().orElse(null);
                for (Result r : rs) {
                    if (one != null && r.concurrency() > 1) {
                        root.with("throughput_vs_one_client").put(r.tier() + "_c" + r.concurrency(),
                                round(r.outputTokensPerSecond() / one.outputTokensPerSecond()));
                    }
                }
            }
            out.println(json.writerWithDefaultPrettyPrinter().writeValueAsString(root));
        } else {
            out.printf(Locale.ROOT, "%s: %d requests per run, prompt %d shared + %d own tokens, %d generated%n", o.model,
                    o.requests, o.prefixTokens, o.suffixTokens, o.maxTokens);
            out.printf(Locale.ROOT, "%-7s %4s %10s %10s %10s %10s %10s %10s %8s %12s %12s %10s%n", "tier", "conc", "ttft p50",
                    "ttft p99", "ttft first", "itl p50", "itl p99", "out tok/s", "hit", "ttft vs off", "first vs off",
                    "same text");
            for (List<Result> rs : results.values()) {
                for (Result r : rs) {
                    Result base = off.get(r.concurrency());
                    boolean vs = base != null && !r.tier().equals("off");
                    out.printf(Locale.ROOT, "%-7s %4d %9.1fms %9.1fms %9.1fms %9.1fms %9.1fms %10.1f %7.1f%% %12s %12s %10s%n",
                            r.tier(), r.concurrency(), r.ttftP50() * 1e3, r.ttftP99() * 1e3, r.firstTtft() * 1e3,
                            r.itlP50() * 1e3, r.itlP99() * 1e3, r.outputTokensPerSecond(), 100 * r.hitRate(),
                            vs ? String.format(Locale.ROOT, "%.3fx", r.ttftP50() / base.ttftP50()) : "",
                            vs ? String.format(Locale.ROOT, "%.3fx", r.firstTtft() / base.ttftP50()) : "",
                            vs ? r.sameOutputs(base) + "/" + r.texts().length : "");
                }
            }
            for (List<Result> rs : results.values()) {
                Result one = rs.stream().filter(r -> r.concurrency() == 1).findFirst().orElse(null);
                for (Result r : rs) {
                    if (one != null && r.concurrency() > 1) {
                        out.printf(Locale.ROOT, "%s: %d concurrent clients give %.2fx the output throughput of one%n", r.tier(),
                                r.concurrency(), r.outputTokensPerSecond() / one.outputTokensPerSecond());
                    }
                }
            }
        }
        out.flush();
    }

    static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
