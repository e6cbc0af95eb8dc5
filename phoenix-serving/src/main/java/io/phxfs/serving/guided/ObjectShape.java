package io.phxfs.serving.guided;

import java.util.List;

/**
 * An object's layout: the declared properties in the order the schema lists them (the order they
 * must be written in, as xgrammar generates them), which of them are required, and the schema of
 * additional properties, which may only follow the declared ones (null when none are allowed).
 */
final class ObjectShape implements ValueShape {
    private final String pointer;
    private final SchemaNode[] values;
    private final LiteralTrie[] keysAfterQuote;
    /** {@code requiredFrom[i]}: the first required property at or after i, or the count when none. */
    private final int[] requiredFrom;
    private final SchemaNode additional;
    private final StringShape extraKey;

    /**
     * @param keyLiterals each declared property's key as JSON text, quotes included
     * @param additional the additional properties' schema, or null when none are allowed
     */
    ObjectShape(String pointer, List<byte[]> keyLiterals, List<SchemaNode> values, List<Boolean> required,
            SchemaNode additional, List<String> names) {
        this.pointer = pointer;
        int n = values.size();
        this.values = values.toArray(SchemaNode[]::new);
        this.keysAfterQuote = new LiteralTrie[n];
        for (int i = 0; i < n; i++) {
            LiteralTrie key = new LiteralTrie();
            key.add(keyLiterals.get(i));
            keysAfterQuote[i] = key.child('"');
        }
        this.requiredFrom = new int[n + 1];
        requiredFrom[n] = n;
        for (int i = n - 1; i >= 0; i--) {
            requiredFrom[i] = required.get(i) ? i : requiredFrom[i + 1];
        }
        this.additional = additional;
        this.extraKey = n == 0 ? StringShape.ANY : new StringShape(0, StringShape.UNBOUNDED, new KeyExclusion(names));
    }

    int declared() {
        return values.length;
    }

    /** Whether the object may close once the declared properties before {@code next} are settled. */
    boolean canClose(int next) {
        return requiredFrom[next] == values.length;
    }

    /** Whether an additional property may come now: after every required one. */
    boolean allowsExtra(int next) {
        return additional != null && canClose(next);
    }

    /** The last declared property that may come next: the first required one, as none may be skipped. */
    int lastCandidate(int next) {
        return Math.min(requiredFrom[next], values.length - 1);
    }

    /** The schema of property {@code k}'s value, -1 for an additional property. */
    SchemaNode value(int k) {
        return k < 0 ? additional : values[k];
    }

    /** Whether any key may be written when properties from {@code next} on are still to come. */
    boolean keyPossible(int next) {
        if (allowsExtra(next)) {
            return true;
        }
        for (int k = next; k <= lastCandidate(next); k++) {
            if (values[k].alternatives().length > 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * Starts a key after its opening quote: one configuration per declared property that may come
     * next, plus one for an additional property's key.
     */
    void startKey(int next, FrameStack below, Successors out) {
        for (int k = next; k <= lastCandidate(next); k++) {
            if (values[k].alternatives().length > 0) {
                out.add(below.push(new ObjectFrame(this, ObjectFrame.IN_KEY, next, k, 0))
                        .push(new LiteralFrame(keysAfterQuote[k])));
            }
        }
        if (allowsExtra(next) && additional.alternatives().length > 0) {
            out.add(below.push(new ObjectFrame(this, ObjectFrame.IN_KEY, next, -1, 0)).push(StringFrame.opened(extraKey)));
        }
    }

    @Override
    public void start(int b, FrameStack below, Successors out) {
        if (b == '{') {
            out.add(below.push(new ObjectFrame(this, ObjectFrame.AFTER_OPEN, 0, -1, 0)));
        }
    }

    @Override
    public String toString() {
        return "object" + pointer;
    }
}
