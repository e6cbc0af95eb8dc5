package io.phxfs.safetensors;

import java.util.Collection;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/** Which tensors to load, decided by name. */
@FunctionalInterface
public interface TensorSelector {
    /**
     * Whether the tensor of this name is selected.
     *
     * @param name the tensor's name
     * @return true to load it
     */
    boolean test(String name);

    /**
     * Every tensor.
     *
     * @return a selector of all tensors
     */
    static TensorSelector all() {
        return AllTensors.INSTANCE;
    }

    /**
     * Exactly these names; {@link WeightLoader} fails when one of them is not in the model.
     *
     * @param names the names to select
     * @return a selector of these names
     */
    static TensorSelector names(Collection<String> names) {
        return new Named(Set.copyOf(names));
    }

    /**
     * Exactly these names; see {@link #names(Collection)}.
     *
     * @param names the names to select
     * @return a selector of these names
     * @throws IllegalArgumentException when a name repeats
     */
    static TensorSelector names(String... names) {
        return names(Set.of(names));
    }

    /**
     * Names in which {@code regex} matches somewhere (anchor with ^...$ for whole names).
     *
     * @param regex a regular expression
     * @return a selector of the names it finds a match in
     * @throws java.util.regex.PatternSyntaxException when {@code regex} is not a valid expression
     */
    static TensorSelector regex(String regex) {
        return regex(Pattern.compile(regex));
    }

    /**
     * Names in which {@code pattern} matches somewhere.
     *
     * @param pattern the pattern to look for
     * @return a selector of the names it finds a match in
     */
    static TensorSelector regex(Pattern pattern) {
        return name -> pattern.matcher(name).find();
    }

    /**
     * The names {@code predicate} accepts.
     *
     * @param predicate the test of a name
     * @return a selector using the predicate
     */
    static TensorSelector of(Predicate<String> predicate) {
        return predicate::test;
    }

    /**
     * A selection by explicit names: each must exist.
     *
     * @param names the names selected
     */
    record Named(Set<String> names) implements TensorSelector {
        @Override
        public boolean test(String name) {
            return names.contains(name);
        }
    }
}

/** {@link TensorSelector#all()}: one instance, so that the loader can tell "everything" apart. */
final class AllTensors implements TensorSelector {
    static final AllTensors INSTANCE = new AllTensors();

    private AllTensors() {
    }

    @Override
    public boolean test(String name) {
        return true;
    }
}
