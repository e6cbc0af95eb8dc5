package io.phxfs.cli;

import ai.djl.inference.Predictor;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.TranslateException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.djl.DjlRuntime;
import io.phxfs.djl.Greedy;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * The DJL work of {@code djl-run}, apart from its picocli command: the command's class must not
 * name a DJL type, so that the CLI runs as named modules without DJL (io.phxfs.djl is a static
 * requirement) and picocli's reflection over the commands loads no DJL class.
 */
final class DjlRun {
    private final long[] ids;
    private final int generate;
    private final int repeat;
    private final boolean json;
    private final Integer device;
    private final String dtype;
    private final boolean lastLogitsOnly;

    private DjlRun(long[] ids, int generate, int repeat, boolean json, Integer device, String dtype, boolean lastLogitsOnly) {
        this.ids = ids;
        this.generate = generate;
        this.repeat = repeat;
        this.json = json;
        this.device = device;
        this.dtype = dtype;
        this.lastLogitsOnly = lastLogitsOnly;
    }

    /**
     * Loads, predicts, generates and prints.
     *
     * @param repeat timed runs of the measured work; 0: as many as {@link Speed#measure} sees fit
     */
    static void run(Path dir, long[] ids, int generate, int top, int repeat, boolean json, PrintWriter out,
                    PrintWriter err) throws IOException {
        run(dir, ids, generate, top, repeat, json, null, "auto", false, out, err);
    }

    /**
     * Like {@link #run(Path, long[], int, int, int, boolean, PrintWriter, PrintWriter)} on a
     * device (null: the CPU), in a compute dtype ({@code auto}: the checkpoint's on a GPU).
     */
    static void run(Path dir, long[] ids, int generate, int top, int repeat, boolean json, Integer device, String dtype,
                    boolean lastLogitsOnly, PrintWriter out, PrintWriter err) throws IOException {
        new DjlRun(ids, generate, repeat, json, device, dtype, lastLogitsOnly).run(dir, top, out, err);
    }

    private void run(Path dir, int top, PrintWriter out, PrintWriter err) throws IOException {
        DjlRuntime.preferOffline();
        DjlRuntime.pytorch();
        Criteria<long[], float[][]> criteria = Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix://" + dir.toAbsolutePath().normalize())
                .optDevice(device == null ? ai.djl.Device.cpu() : ai.djl.Device.gpu(device))
                .optArgument(io.phxfs.djl.PhoenixBlockFactory.DTYPE, dtype).build();
        long t0 = System.nanoTime();
        try (ZooModel<long[], float[][]> model = loadModel(criteria);
             Predictor<long[], float[][]> predictor = model.newPredictor()) {
            double loadSeconds = (System.nanoTime() - t0) / 1e9;
            // the first forward pass (or generation) is the warm-up: the engine's first calls with
            // these shapes, the JIT; timed runs of the same work follow it
            long t1 = System.nanoTime();
            float[][] logits = predict(predictor);
            long warmUp = System.nanoTime() - t1;
            // loadModel() to the first token's logits: what a user waits for before the first token
            double firstTokenSeconds = (System.nanoTime() - t0) / 1e9;
            float[] last = logits[logits.length - 1];
            int[] best = topK(last, Math.min(top, last.length));
            long[] generated = new long[0];
            Speed speed;
            if (generate > 0) {
                Greedy greedy = Greedy.of(model);
                Greedy.Result r = greedy.generate(ids, generate, true);
                generated = r.tokens();
                speed = Speed.measure(repeat, r.nanos(), generate, () -> greedy.generate(ids, generate, true).nanos());
            } else {
                speed = Speed.measure(repeat, warmUp, ids.length, () -> {
                    long t = System.nanoTime();
                    predict(predictor);
                    return System.nanoTime() - t;
                });
            }
            if (!speed.reliable()) {
                err.println("phoenix: djl-run: warning: tokens/s is unreliable: " + speed.unreliableBecause());
                err.flush();
            }
            if (json) {
                CausalLmBlock b = (CausalLmBlock) model.getBlock();
                writeJson(out, lastLogitsOnly ? new float[][] {last} : logits, last, best, generated, loadSeconds, speed,
                        firstTokenSeconds, model.getNDManager().getDevice().toString(), b.dtype().toString());
            } else {
                CausalLmBlock block = (CausalLmBlock) model.getBlock();
                out.printf(Locale.ROOT, "model     %s (%s, %d layers, vocab %d, %s on %s): loaded by Phoenix into DJL in %.3f s%n",
                        dir, block.config().modelType(), block.layers(), block.vocabSize(), block.dtype(),
                        model.getNDManager().getDevice(), loadSeconds);
                out.printf(Locale.ROOT, "input     %s%n", join(ids));
                out.println("next      id      logit");
                for (int id : best) {
                    out.printf(Locale.ROOT, "          %-7d %.6f%n", id, last[id]);
                }
                if (generate > 0) {
                    out.printf(Locale.ROOT, "generated %s%n", join(generated));
                }
                out.printf(Locale.ROOT, "speed     %.1f tokens/s (%s; %s)%s%n", speed.median(),
                        generate > 0 ? "greedy, KV cache" : "forward pass over the input", speed.describe(),
                        speed.reliable() ? "" : "  UNRELIABLE: " + speed.unreliableBecause());
            }
            out.flush();
        }
    }

    private static ZooModel<long[], float[][]> loadModel(Criteria<long[], float[][]> criteria) throws IOException {
        try {
            return criteria.loadModel();
        } catch (ai.djl.repository.zoo.ModelNotFoundException | ai.djl.MalformedModelException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /**
     * A speed from timed runs of the same work: the median of the runs' rates, their spread, and
     * whether they can mean anything.
     *
     * @param median tokens/s, the median of the runs'
     * @param min the slowest run's
     * @param p25 the 25th percentile
     * @param p75 the 75th percentile
     * @param max the fastest run's
     * @param runs timed runs (0: only the warm-up run, whose rate these are)
     * @param seconds the timed runs' time in all
     * @param unreliableBecause why the figure means little, or null
     */
    record Speed(double median, double min, double p25, double p75, double max, int runs, double seconds,
                 String unreliableBecause) {
        /** By default, timed runs go on until there are this many ... */
        static final int MIN_RUNS = 5;
        /** ... and they took this long (seconds) ... */
        static final double MIN_SECONDS = 1.0;
        /** ... but none begins after this (seconds, the warm-up included) ... */
        static final double BUDGET_SECONDS = 10.0;
        /** ... nor after this many. */
        static final int MAX_RUNS = 100_000;

        boolean reliable() {
            return unreliableBecause == null;
        }

        /** The middle half of the runs' rates as a fraction of the median. */
        double spread() {
            return median == 0 ? 0 : (p75 - p25) / median;
        }

        String describe() {
            if (runs == 0) {
                return "one run, the warm-up";
            }
            return String.format(Locale.ROOT, "median of %d run%s in %.2f s, middle half %.1f-%.1f", runs,
                    runs == 1 ? "" : "s", seconds, p25, p75);
        }

        /**
         * Times {@code run} after a warm-up run that took {@code warmUpNanos}.
         *
         * @param repeat timed runs; 0: at least {@link #MIN_RUNS} and {@link #MIN_SECONDS} of them, none
         *               begun after {@link #BUDGET_SECONDS}
         * @param tokens tokens per run
         * @param run one run of the work, returning the nanoseconds it took
         */
        static Speed measure(int repeat, long warmUpNanos, double tokens, LongSupplier run) {
            long[] nanos = new long[16];
            int n = 0;
            long timed = 0;
            long start = System.nanoTime();
            while (repeat > 0 ? n < repeat
                    : (n < MIN_RUNS || timed < MIN_SECONDS * 1e9) && n < MAX_RUNS
                      && warmUpNanos + (System.nanoTime() - start) < BUDGET_SECONDS * 1e9) {
                long t = Math.max(1, run.getAsLong());
                if (n == nanos.length) {
                    nanos = Arrays.copyOf(nanos, 2 * n);
                }
                nanos[n++] = t;
                timed += t;
            }
            boolean warmUpOnly = n == 0;
            long[] sample = warmUpOnly ? new long[] {Math.max(1, warmUpNanos)} : Arrays.copyOf(nanos, n);
            double[] rates = new double[sample.length];
            for (int i = 0; i < sample.length; i++) {
                rates[i] = tokens * 1e9 / sample[i];
            }
            Arrays.sort(rates);
            double seconds = (warmUpOnly ? sample[0] : timed) / 1e9;
            double median = percentile(rates, 0.5);
            double p25 = percentile(rates, 0.25);
            double p75 = percentile(rates, 0.75);
            List<String> why = new ArrayList<>();
            if (warmUpOnly) {
                why.add(String.format(Locale.ROOT, "no timed run after the warm-up (which took %.2f s, the engine's"
                        + " first calls included): give --repeat", seconds));
            } else {
                if (n < DjlRunCommand.RELIABLE_RUNS) {
                    why.add("only " + n + " timed run" + (n == 1 ? "" : "s") + " (under " + DjlRunCommand.RELIABLE_RUNS
                            + "), too few to tell the noise");
                }
                if (seconds < DjlRunCommand.RELIABLE_SECONDS) {
                    why.add(String.format(Locale.ROOT, "the timed runs took %.3f s in all (under %s s), too short to"
                            + " time", seconds, DjlRunCommand.RELIABLE_SECONDS));
                }
                double spread = median == 0 ? 0 : (p75 - p25) / median;
                if (n >= DjlRunCommand.RELIABLE_RUNS && spread * 100 > DjlRunCommand.RELIABLE_SPREAD_PERCENT) {
                    why.add(String.format(Locale.ROOT, "the middle half of the runs spans %.0f%% of the median (over"
                            + " %d%%): too noisy to mean much (a busy machine?)", spread * 100,
                            DjlRunCommand.RELIABLE_SPREAD_PERCENT));
                }
            }
            if (!warmUpOnly && repeat > 0 && (n < DjlRunCommand.RELIABLE_RUNS || seconds < DjlRunCommand.RELIABLE_SECONDS)) {
                why.add("a larger --repeat, or none (the default), times more");
            }
            return new Speed(median, rates[0], p25, p75, rates[rates.length - 1], warmUpOnly ? 0 : n, seconds,
                    why.isEmpty() ? null : String.join("; ", why));
        }

        /** Linear interpolation between the closest ranks of sorted values. */
        static double percentile(double[] sorted, double q) {
            double pos = q * (sorted.length - 1);
            int lo = (int) Math.floor(pos);
            int hi = Math.min(sorted.length - 1, lo + 1);
            return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
        }
    }

    private float[][] predict(Predictor<long[], float[][]> predictor) {
        try {
            return predictor.predict(ids);
        } catch (TranslateException e) {
            // the block's own message (an id outside the vocabulary, too many positions) is what the user needs
            Throwable t = e;
            while (t.getCause() != null) {
                t = t.getCause();
            }
            if (t instanceof IllegalArgumentException iae) {
                throw iae;
            }
            throw new IllegalStateException(t.getMessage(), e);
        }
    }

    /** Indices of the k largest values, largest first (the lower id first on ties). */
    static int[] topK(float[] row, int k) {
        List<Integer> idx = new ArrayList<>(row.length);
        for (int i = 0; i < row.length; i++) {
            idx.add(i);
        }
        idx.sort((a, b) -> {
            int c = Float.compare(row[b], row[a]);
            return c != 0 ? c : Integer.compare(a, b);
        });
        int[] out = new int[k];
        for (int i = 0; i < k; i++) {
            out[i] = idx.get(i);
        }
        return out;
    }

    private static String join(long[] v) {
        StringBuilder sb = new StringBuilder();
        for (long x : v) {
            sb.append(sb.isEmpty() ? "" : " ").append(x);
        }
        return sb.toString();
    }

    private void writeJson(PrintWriter out, float[][] logits, float[] last, int[] best, long[] generated,
                           double loadSeconds, Speed speed, double firstTokenSeconds, String onDevice, String computeDtype)
            throws IOException {
        try (JsonGenerator g = new JsonFactory().createGenerator(out)) {
            g.useDefaultPrettyPrinter(); // every command's JSON in one style (arrays stay on one line)
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            g.writeStartObject();
            g.writeArrayFieldStart("ids");
            for (long id : ids) {
                g.writeNumber(id);
            }
            g.writeEndArray();
            g.writeArrayFieldStart("logits");
            for (float[] row : logits) {
                g.writeStartArray();
                for (float f : row) {
                    g.writeNumber(f);
                }
                g.writeEndArray();
            }
            g.writeEndArray();
            g.writeArrayFieldStart("top");
            for (int id : best) {
                g.writeStartArray();
                g.writeNumber(id);
                g.writeNumber(last[id]);
                g.writeEndArray();
            }
            g.writeEndArray();
            g.writeArrayFieldStart("generated");
            for (long id : generated) {
                g.writeNumber(id);
            }
            g.writeEndArray();
            g.writeNumberField("load_seconds", loadSeconds);
            g.writeNumberField("first_token_seconds", firstTokenSeconds);
            g.writeStringField("device", onDevice);
            g.writeStringField("dtype", computeDtype);
            g.writeNumberField("tokens_per_s", speed.median());
            g.writeNumberField("tokens_per_s_min", speed.min());
            g.writeNumberField("tokens_per_s_p25", speed.p25());
            g.writeNumberField("tokens_per_s_p75", speed.p75());
            g.writeNumberField("tokens_per_s_max", speed.max());
            g.writeNumberField("tokens_per_s_spread", speed.spread());
            g.writeNumberField("timed_runs", speed.runs());
            g.writeNumberField("timed_seconds", speed.seconds());
            g.writeBooleanField("reliable", speed.reliable());
            if (!speed.reliable()) {
                g.writeStringField("unreliable_because", speed.unreliableBecause());
            }
            g.writeEndObject();
        }
        out.println();
    }
}
