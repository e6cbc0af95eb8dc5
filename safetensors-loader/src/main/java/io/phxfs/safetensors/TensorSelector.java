package io.phxfs.safetensors;

import java.util.Collection;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/** Which tensors to load, decided by name. */
@FunctionalInterface
public interface TensorSelector {
    boolean test(String name);

    /** Every tensor. */
    static TensorSelector all() {
        return name -> true;
    }

    /** Exactly these names; {@link WeightLoader} fails when one of them is not in the model. */
    static TensorSelector names(Collection<String> names) {
        return new Named(Set.copyOf(names));
    }

    static TensorSelector names(String... names) {
        return names(Set.of(names));
    }

    /** Names in which {@code regex} matches somewhere (anchor with ^...$ for whole names). */
    static TensorSelector regex(String regex) {
        return regex(Pattern.compile(regex));
    }

    static TensorSelector regex(Pattern pattern) {
        return name -> pattern.matcher(name).find();
    }

    static TensorSelector of(Predicate<String> predicate) {
        return predicate::test;
    }

    /** A selection by explicit names: each must exist. */
    record Named(Set<String> names) implements TensorSelector {
        @Override
        public boolean test(String name) {
            return names.contains(name);
        }
    }
}
