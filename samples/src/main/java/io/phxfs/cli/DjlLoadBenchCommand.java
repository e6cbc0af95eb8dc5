package io.phxfs.cli;

import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.SafetensorsWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix djl-load-bench FILE [--write SIZE] [--rounds N]}: a safetensors file into DJL
 * arrays, by Phoenix ({@link SafetensorsNDList}) and by DJL's own {@code NDList.decode}, each in
 * a JVM of its own (so that each has its own peak RSS), from a warm page cache, the order
 * alternating from round to round.
 */
@Command(name = "djl-load-bench", mixinStandardHelpOptions = true,
        description = {"Loads a safetensors file into DJL NDArrays with Phoenix (SafetensorsNDList) and with DJL's"
                        + " NDList.decode, each round in fresh JVMs, and prints the time and peak RSS of each.",
                "NDList.decode takes files under 2 GiB of F32/F16/integer tensors only (bf16 terminates its JVM).",
                "The rounds' JVMs keep their stderr to themselves unless -v (DJL's informational log) or -vv (its"
                        + " debug log too) is given, or a -Dorg.slf4j.simpleLogger.* setting, which they inherit."})
final class DjlLoadBenchCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "A .safetensors file (under 2 GiB, for decode).")
    Path file;

    @Option(names = "--write", paramLabel = "SIZE", converter = Sizes.Converter.class,
            description = "First write FILE: about SIZE bytes of float32 tensors (random values), shaped as a Llama's.")
    Long write;

    @Option(names = "--rounds", defaultValue = "2", description = "Rounds of (phoenix, decode) (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = {"-v", "--verbose"}, description = "The rounds' stderr, with DJL's informational log; -vv its"
            + " debug log too.")
    boolean[] verbose = new boolean[0];

    @Option(names = "--child", hidden = true, description = "Internal: run one path in this JVM (phoenix or decode).")
    String child;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        DjlRunCommand.requireDjl("djl-load-bench");
        DjlRunCommand.logLevel(verbose.length);
        PrintWriter out = spec.commandLine().getOut();
        if (child != null) {
            out.println(DjlBenchChild.run(child, file));
            out.flush();
            return 0;
        }
        if (write != null) {
            writeF32(file, write);
        }
        long size = Files.size(file);
        warm(file);
        List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx" + Math.max(1024, 2 * (size >> 20) + 512) + "m",
                "-cp", System.getProperty("java.class.path")));
        // the logging settings of this JVM (-v, or -D...simpleLogger...) hold in the rounds' too
        boolean logging = false;
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("org.slf4j.simpleLogger.")) {
                java.add("-D" + key + "=" + System.getProperty(key));
                logging = true;
            }
        }
        java.addAll(List.of(PhoenixCli.class.getName(), "djl-load-bench"));
        ProcessBuilder.Redirect childErr = logging ? ProcessBuilder.Redirect.INHERIT : ProcessBuilder.Redirect.DISCARD;
        out.printf(Locale.ROOT, "file %s: %,d bytes%n", file, size);
        out.println("round path     seconds  GB/s   RSS after engine start  peak RSS   peak - start  tensors  checksum");
        double[] best = {Double.MAX_VALUE, Double.MAX_VALUE};
        long[] peak = {0, 0};
        String[] sums = new String[2];
        for (int r = 1; r <= rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int p = (k + r + 1) % 2; // phoenix first in odd rounds, decode first in even ones
                String path = p == 0 ? "phoenix" : "decode";
                List<String> cmd = new ArrayList<>(java);
                cmd.addAll(List.of("--child", path, file.toString()));
                Process proc = new ProcessBuilder(cmd).redirectError(childErr).start();
                String line;
                try (BufferedReader rd = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
                    line = rd.lines().filter(l -> l.startsWith("result ")).findFirst().orElse(null);
                }
                int rc = proc.waitFor();
                if (rc != 0 || line == null) {
                    out.printf(Locale.ROOT, "%-5d %-8s failed: exit %d%n", r, path, rc);
                    continue;
                }
                String[] f = line.split(" ");
                double sec = Double.parseDouble(f[1]);
                long start = Long.parseLong(f[2]);
                long hwm = Long.parseLong(f[3]);
                best[p] = Math.min(best[p], sec);
                peak[p] = Math.max(peak[p], hwm - start);
                sums[p] = f[5];
                out.printf(Locale.ROOT, "%-5d %-8s %7.3f  %5.2f  %,14d  %,14d  %,12d  %7s  %s%n", r, path, sec,
                        size / sec / 1e9, start, hwm, hwm - start, f[4], f[5]);
                out.flush();
            }
        }
        out.printf(Locale.ROOT, "best: phoenix %.3f s, decode %.3f s: phoenix %.2fx faster; peak RSS growth: phoenix %.2f x"
                        + " the file, decode %.2f x the file; contents %s%n", best[0], best[1], best[1] / best[0],
                peak[0] / (double) size, peak[1] / (double) size,
                sums[0] != null && sums[0].equals(sums[1]) ? "identical" : "DIFFER");
        out.flush();
        return sums[0] != null && sums[0].equals(sums[1]) ? 0 : 1;
    }

    private static void warm(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocateDirect(8 << 20);
            while (ch.read(b) > 0) {
                b.clear();
            }
        }
    }

    /** float32 tensors shaped as a Llama's (hidden 4096, MLP 14336), random values, about {@code size} bytes. */
    static void writeF32(Path file, long size) throws IOException {
        long hidden = 4096;
        long inter = 14336;
        long vocab = 32000;
        List<SafetensorsWriter.Spec> specs = new ArrayList<>();
        specs.add(new SafetensorsWriter.Spec("model.embed_tokens.weight", Dtype.F32, new long[] {vocab, hidden}));
        long bytes = vocab * hidden * 4;
        for (int i = 0; ; i++) {
            String p = "model.layers." + i + ".";
            List<SafetensorsWriter.Spec> layer = List.of(
                    new SafetensorsWriter.Spec(p + "self_attn.q_proj.weight", Dtype.F32, new long[] {hidden, hidden}),
                    new SafetensorsWriter.Spec(p + "self_attn.o_proj.weight", Dtype.F32, new long[] {hidden, hidden}),
                    new SafetensorsWriter.Spec(p + "mlp.gate_proj.weight", Dtype.F32, new long[] {inter, hidden}),
                    new SafetensorsWriter.Spec(p + "mlp.down_proj.weight", Dtype.F32, new long[] {hidden, inter}));
            long lb = layer.stream().mapToLong(SafetensorsWriter.Spec::nbytes).sum();
            if (bytes + lb > size) {
                break;
            }
            specs.addAll(layer);
            bytes += lb;
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        SplittableRandom rnd = new SplittableRandom(1);
        // Ctrl-C before the file is complete and synced removes it (the temporary first)
        Path tmp = TempFiles.track(file.resolveSibling(file.getFileName() + ".tmp"), Thread.currentThread());
        TempFiles.track(file, Thread.currentThread());
        try {
            SafetensorsWriter.write(file, Map.of("format", "pt"), specs, (t, off, dst) -> {
                while (dst.remaining() >= 4) {
                    dst.putFloat((float) rnd.nextGaussian());
                }
            });
            // written back before any round, so that no round competes with the writeback
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.force(true);
            }
        } finally {
            // the writer removed its temporary on failure; a complete file stays for the rounds
            TempFiles.untrack(tmp);
            TempFiles.untrack(file);
        }
    }
}
