package io.phxfs.examples;

import ai.djl.inference.Predictor;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import java.nio.file.Path;

/** Runs a Hugging Face checkpoint in DJL, its weights loaded by Phoenix: the most likely next token. */
public final class NextTokenLogits {
    /** {@code NextTokenLogits MODEL_DIR ID...}: MODEL_DIR holds config.json and the safetensors. */
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: NextTokenLogits MODEL_DIR TOKEN_ID...");
            System.exit(2);
        }
        long[] ids = new long[args.length - 1];
        for (int i = 1; i < args.length; i++) {
            ids[i - 1] = Long.parseLong(args[i]);
        }
        Criteria<long[], float[]> criteria = Criteria.builder().setTypes(long[].class, float[].class)
                .optModelUrls("phoenix://" + Path.of(args[0]).toAbsolutePath()).build();
        try (ZooModel<long[], float[]> model = criteria.loadModel();
             Predictor<long[], float[]> predictor = model.newPredictor()) {
            float[] logits = predictor.predict(ids);            // the next token's logits
            int best = 0;
            for (int i = 1; i < logits.length; i++) {
                best = logits[i] > logits[best] ? i : best;
            }
            System.out.println("next token " + best + " (logit " + logits[best] + ")");
        }
    }
}
