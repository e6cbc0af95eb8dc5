package io.phxfs.serving.guided;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** A finite set of values, each to be written exactly as its compact JSON (enum, const, boolean, null). */
final class LiteralSet implements ValueShape {
    static final LiteralSet BOOLEAN = of(List.of("true", "false"));
    static final LiteralSet NULL = of(List.of("null"));

    private final Set<String> literals;
    private final LiteralTrie root = new LiteralTrie();

    private LiteralSet(Set<String> literals) {
        this.literals = literals;
        for (String l : literals) {
            root.add(l.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** The set of the given compact JSON texts. */
    static LiteralSet of(Iterable<String> compactJson) {
        Set<String> set = new LinkedHashSet<>();
        compactJson.forEach(set::add);
        return new LiteralSet(set);
    }

    /** One set holding the literals of all of {@code sets}. */
    static LiteralSet union(List<LiteralSet> sets) {
        Set<String> all = new LinkedHashSet<>();
        for (LiteralSet s : sets) {
            all.addAll(s.literals);
        }
        return new LiteralSet(all);
    }

    boolean isEmpty() {
        return literals.isEmpty();
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        root.step(b, below, out);
    }

    @Override
    public String toString() {
        return "literals" + literals;
    }
}
