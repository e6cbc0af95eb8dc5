package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.translate.NoBatchifyTranslator;
import ai.djl.translate.TranslatorContext;

/**
 * Token ids of one sequence to the logits of the token that follows it (the last position's
 * row, {@code vocab} floats).
 */
public final class NextTokenTranslator implements NoBatchifyTranslator<long[], float[]> {
    /** A translator. */
    public NextTokenTranslator() {
    }

    @Override
    public NDList processInput(TranslatorContext ctx, long[] ids) {
        if (ids == null || ids.length == 0) {
            throw new IllegalArgumentException("input ids: at least one token id");
        }
        return new NDList(ctx.getNDManager().create(ids));
    }

    @Override
    public float[] processOutput(TranslatorContext ctx, NDList list) {
        NDArray logits = list.head();
        return logits.get(logits.getShape().get(0) - 1).toFloatArray();
    }
}
