package io.phxfs.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDList;
import ai.djl.translate.NoopTranslator;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorFactory;
import ai.djl.util.Pair;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.Set;

/**
 * Translators of the Phoenix causal LMs: {@code long[] -> float[]} ({@link NextTokenTranslator}),
 * {@code long[] -> float[][]} ({@link LogitsTranslator}) and {@code NDList -> NDList} (ids in,
 * {@code [T, vocab]} logits out).
 */
public final class PhoenixTranslatorFactory implements TranslatorFactory {
    private static final Set<Pair<Type, Type>> TYPES = Set.of(new Pair<>(long[].class, float[].class),
            new Pair<>(long[].class, float[][].class), new Pair<>(NDList.class, NDList.class));

    /** A factory; DJL instantiates it by class name. */
    public PhoenixTranslatorFactory() {
    }

    @Override
    public Set<Pair<Type, Type>> getSupportedTypes() {
        return TYPES;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <I, O> Translator<I, O> newInstance(Class<I> input, Class<O> output, Model model, Map<String, ?> arguments) {
        if (input == long[].class && output == float[].class) {
            return (Translator<I, O>) new NextTokenTranslator();
        }
        if (input == long[].class && output == float[][].class) {
            return (Translator<I, O>) new LogitsTranslator();
        }
        if (input == NDList.class && output == NDList.class) {
            return (Translator<I, O>) new NoopTranslator();
        }
        throw new IllegalArgumentException("unsupported types " + input.getName() + " -> " + output.getName()
                + ": long[] -> float[], long[] -> float[][] or NDList -> NDList");
    }
}
