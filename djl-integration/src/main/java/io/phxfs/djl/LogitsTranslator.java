package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.translate.NoBatchifyTranslator;
import ai.djl.translate.TranslatorContext;

/** Token ids of one sequence to the logits of every position: one row of {@code vocab} floats per id. */
public final class LogitsTranslator implements NoBatchifyTranslator<long[], float[][]> {
    /** A translator. */
    public LogitsTranslator() {
    }

    @Override
    public NDList processInput(TranslatorContext ctx, long[] ids) {
        if (ids == null || ids.length == 0) {
            throw new IllegalArgumentException("input ids: at least one token id");
        }
        return new NDList(ctx.getNDManager().create(ids));
    }

    @Override
    public float[][] processOutput(TranslatorContext ctx, NDList list) {
        NDArray logits = list.head();
        int t = (int) logits.getShape().get(0);
        int v = (int) logits.getShape().get(1);
        float[] flat = logits.toFloatArray();
        float[][] rows = new float[t][v];
        for (int i = 0; i < t; i++) {
            System.arraycopy(flat, i * v, rows[i], 0, v);
        }
        return rows;
    }
}
