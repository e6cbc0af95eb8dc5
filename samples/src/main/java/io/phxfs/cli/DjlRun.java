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
import java.util.List;
import java.util.Locale;

/**
 * The DJL work of {@code djl-run}, apart from its picocli command: the command's class must not
 * name a DJL type, so that the CLI runs as named modules without DJL (io.phxfs.djl is a static
 * requirement) and picocli's reflection over the commands loads no DJL class.
 */
final class DjlRun {
    private final long[] ids;
    private final int generate;
    private final boolean json;

    private DjlRun(long[] ids, int generate, boolean json) {
        this.ids = ids;
        this.generate = generate;
        this.json = json;
    }

    static void run(Path dir, long[] ids, int generate, int top, boolean json, PrintWriter out) throws IOException {
        new DjlRun(ids, generate, json).run(dir, top, out);
    }

    private void run(Path dir, int top, PrintWriter out) throws IOException {
        DjlRuntime.preferOffline();
        DjlRuntime.pytorch();
        Criteria<long[], float[][]> criteria = Criteria.builder().setTypes(long[].class, float[][].class)
                .optModelUrls("phoenix://" + dir.toAbsolutePath().normalize()).build();
        long t0 = System.nanoTime();
        try (ZooModel<long[], float[][]> model = loadModel(criteria);
             Predictor<long[], float[][]> predictor = model.newPredictor()) {
            double loadSeconds = (System.nanoTime() - t0) / 1e9;
            long t1 = System.nanoTime();
            float[][] logits = predict(predictor);
            double forwardSeconds = (System.nanoTime() - t1) / 1e9;
            float[] last = logits[logits.length - 1];
            int[] best = topK(last, Math.min(top, last.length));
            long[] generated = new long[0];
            double tokensPerSecond = forwardSeconds == 0 ? 0 : ids.length / forwardSeconds;
            if (generate > 0) {
                Greedy.Result r = Greedy.of(model).generate(ids, generate, true);
                generated = r.tokens();
                tokensPerSecond = r.tokensPerSecond();
            }
            if (json) {
                writeJson(out, logits, last, best, generated, loadSeconds, tokensPerSecond);
            } else {
                CausalLmBlock block = (CausalLmBlock) model.getBlock();
                out.printf(Locale.ROOT, "model     %s (%s, %d layers, vocab %d): loaded by Phoenix into DJL in %.3f s%n",
                        dir, block.config().modelType(), block.layers(), block.vocabSize(), loadSeconds);
                out.printf(Locale.ROOT, "input     %s%n", join(ids));
                out.println("next      id      logit");
                for (int id : best) {
                    out.printf(Locale.ROOT, "          %-7d %.6f%n", id, last[id]);
                }
                if (generate > 0) {
                    out.printf(Locale.ROOT, "generated %s%n", join(generated));
                    out.printf(Locale.ROOT, "speed     %.1f tokens/s (greedy, KV cache)%n", tokensPerSecond);
                } else {
                    out.printf(Locale.ROOT, "speed     %.1f tokens/s (forward pass over the input)%n", tokensPerSecond);
                }
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
                           double loadSeconds, double tokensPerSecond) throws IOException {
        try (JsonGenerator g = new JsonFactory().createGenerator(out)) {
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
            g.writeNumberField("tokens_per_s", tokensPerSecond);
            g.writeEndObject();
        }
        out.println();
    }
}
