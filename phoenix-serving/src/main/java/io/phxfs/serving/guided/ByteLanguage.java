package io.phxfs.serving.guided;

import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.ByteRunAutomaton;
import org.apache.lucene.util.automaton.Operations;
import org.apache.lucene.util.automaton.TooComplexToDeterminizeException;
import org.apache.lucene.util.automaton.UTF32ToUTF8;

/**
 * A regular language of UTF-8 byte strings (a {@code pattern}, a {@code guided_regex}, a
 * {@code guided_choice}), as a deterministic automaton read a byte at a time. Every state it
 * reaches can still reach an accepting one, so a guide that follows it never walks into a dead
 * end. Immutable; compares by identity (frames holding it then compare cheaply).
 */
final class ByteLanguage {
    /**
     * The most work determinizing may take (Lucene's measure): past it a pattern such as
     * {@code (a|b)*a(a|b){20}} is refused rather than built with millions of states.
     */
    static final int DETERMINIZE_WORK = 20_000;
    private final ByteRunAutomaton run;
    /** Per state, the fewest characters that lead to an accepting state (computed on first use). */
    private volatile int[] minChars;

    private ByteLanguage(ByteRunAutomaton run) {
        this.run = run;
    }

    /**
     * The language of the UTF-8 encodings of the strings a code-point automaton accepts.
     *
     * @param codePoints the automaton over code points
     * @param what what the language is, for the message of a failure
     * @throws IllegalArgumentException where no string matches, or the automaton is too complex to build
     */
    static ByteLanguage of(Automaton codePoints, String what) {
        Automaton utf8 = new UTF32ToUTF8().convert(Operations.removeDeadStates(codePoints));
        Automaton det;
        try {
            det = Operations.determinize(utf8, DETERMINIZE_WORK);
        } catch (TooComplexToDeterminizeException e) {
            throw new IllegalArgumentException(what + " is too complex to guide by (its automaton would exceed "
                    + DETERMINIZE_WORK + " units of work to build)");
        }
        det = Operations.removeDeadStates(det);
        if (Operations.isEmpty(det)) {
            throw new IllegalArgumentException(what + " matches no string that can be written here");
        }
        return new ByteLanguage(new ByteRunAutomaton(det, true));
    }

    /** The bytes its run table takes. */
    long tableBytes() {
        return run.ramBytesUsed();
    }

    /** The number of states (0 .. size - 1). */
    int size() {
        return run.getSize();
    }

    /** The state before the first byte. */
    int start() {
        return 0;
    }

    /** The state after byte {@code b}, or -1 where no string of the language continues so. */
    int step(int state, int b) {
        return run.step(state, b);
    }

    /** Whether the bytes read to {@code state} are a whole string of the language. */
    boolean accepts(int state) {
        return run.isAccept(state);
    }

    /**
     * The fewest characters (code points: UTF-8 lead bytes) that take {@code state} to an
     * accepting state; 0 where it accepts. A bound on the length of what is written can then be
     * kept without walking into a dead end.
     */
    int minChars(int state) {
        int[] m = minChars;
        if (m == null) {
            m = distances();
            minChars = m;
        }
        return m[state];
    }

    /** The largest {@link #minChars} of any state: the most characters a live state may still need. */
    int maxMinChars() {
        int m = maxMinChars;
        if (m < 0) {
            minChars(0);
            m = 0;
            for (int d : minChars) {
                m = Math.max(m, d);
            }
            maxMinChars = m;
        }
        return m;
    }

    private volatile int maxMinChars = -1;

    /**
     * The most work (states x symbol intervals x rounds) {@link #representatives} spends before it
     * gives up: up to some tens of milliseconds and of megabytes, once per language and depth.
     */
    static final long REFINE_WORK = 8_000_000;

    /** What refining gave, per depth asked (one per vocabulary using this language); null: too much work. */
    private final java.util.concurrent.ConcurrentHashMap<Integer, java.util.Optional<int[]>> representatives =
            new java.util.concurrent.ConcurrentHashMap<>(2);

    /**
     * Per state, the least state that no string of at most {@code depth} bytes tells apart from it:
     * the same strings of that length are readable from both, and each such string ends in an
     * accepting state from both or from neither. A walk of tokens that can read at most
     * {@code depth} bytes of this language therefore allows the same tokens from either state, and
     * one mask serves them: a bounded repetition ({@code [a-z ]{0,200}}) is a new state at every
     * character, yet all but its last {@code depth} states are one class. Moore's partition
     * refinement, cut at {@code depth} rounds or when the partition stops changing.
     *
     * @param depth the longest string that must not tell two states of a class apart
     * @return per state its class's least state, or null where refining would cost more than
     *         {@link #REFINE_WORK} (then every state stands alone)
     */
    int[] representatives(int depth) {
        return representatives.computeIfAbsent(depth, d -> java.util.Optional.ofNullable(refine(d))).orElse(null);
    }

    private int[] refine(int depth) {
        int n = run.getSize();
        int[] points = run.getCharIntervals();
        int m = points.length;
        if ((long) n * (m + 1) * Math.max(1, Math.min(depth, n)) > REFINE_WORK) {
            return null;
        }
        int[] next = new int[n * m];
        for (int s = 0; s < n; s++) {
            for (int i = 0; i < m; i++) {
                next[s * m + i] = run.step(s, points[i]);
            }
        }
        // classes are numbered densely from 0, in order of their first state: accepting or not first
        int[] cls = new int[n];
        int acceptId = -1;
        int rejectId = -1;
        int classes = 0;
        for (int s = 0; s < n; s++) {
            if (run.isAccept(s)) {
                acceptId = acceptId < 0 ? classes++ : acceptId;
                cls[s] = acceptId;
            } else {
                rejectId = rejectId < 0 ? classes++ : rejectId;
                cls[s] = rejectId;
            }
        }
        for (int round = 0; round < depth && classes < n; round++) {
            java.util.HashMap<Signature, Integer> ids = new java.util.HashMap<>();
            int[] split = new int[n];
            for (int s = 0; s < n; s++) {
                int[] sig = new int[m + 1];
                sig[0] = cls[s];
                for (int i = 0; i < m; i++) {
                    int t = next[s * m + i];
                    sig[i + 1] = t < 0 ? -1 : cls[t];
                }
                Integer id = ids.putIfAbsent(new Signature(sig), ids.size());
                split[s] = id == null ? ids.size() - 1 : id;
            }
            if (ids.size() == classes) {
                break; // refinement only splits: as many classes as before is the same partition, stable
            }
            classes = ids.size();
            cls = split;
        }
        int[] least = new int[n];
        java.util.Arrays.fill(least, -1);
        int[] rep = new int[n];
        for (int s = 0; s < n; s++) {
            if (least[cls[s]] < 0) {
                least[cls[s]] = s;
            }
            rep[s] = least[cls[s]];
        }
        return rep;
    }

    /** A state's class and its successors' classes, per symbol interval: compared by content. */
    private static final class Signature {
        private final int[] of;
        private final int hash;

        Signature(int[] of) {
            this.of = of;
            this.hash = java.util.Arrays.hashCode(of);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Signature other && java.util.Arrays.equals(of, other.of);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** Per byte value, whether some state reads it. */
    boolean[] readableBytes() {
        boolean[] out = new boolean[256];
        int[] points = run.getCharIntervals();
        for (int i = 0; i < points.length; i++) {
            int from = points[i];
            int to = i + 1 < points.length ? points[i + 1] : 256;
            boolean read = false;
            for (int s = 0; s < run.getSize() && !read; s++) {
                read = run.step(s, from) >= 0;
            }
            for (int b = from; b < Math.min(to, 256); b++) {
                out[b] = read;
            }
        }
        return out;
    }

    /** A 0-1 breadth-first search from the accepting states over the reversed transitions. */
    private int[] distances() {
        int n = run.getSize();
        int[][] into = new int[n][];
        int[] count = new int[n];
        for (int s = 0; s < n; s++) {
            for (int b = 0; b < 256; b++) {
                int t = run.step(s, b);
                if (t >= 0) {
                    count[t]++;
                }
            }
        }
        for (int t = 0; t < n; t++) {
            into[t] = new int[count[t]];
            count[t] = 0;
        }
        for (int s = 0; s < n; s++) {
            for (int b = 0; b < 256; b++) {
                int t = run.step(s, b);
                if (t >= 0) {
                    into[t][count[t]++] = s << 8 | b;
                }
            }
        }
        int[] dist = new int[n];
        java.util.Arrays.fill(dist, Integer.MAX_VALUE);
        java.util.ArrayDeque<Integer> queue = new java.util.ArrayDeque<>();
        for (int s = 0; s < n; s++) {
            if (run.isAccept(s)) {
                dist[s] = 0;
                queue.add(s);
            }
        }
        while (!queue.isEmpty()) {
            int t = queue.poll();
            for (int edge : into[t]) {
                int s = edge >>> 8;
                int cost = startsCharacter(edge & 0xff) ? 1 : 0;
                if (dist[t] + cost < dist[s]) {
                    dist[s] = dist[t] + cost;
                    if (cost == 0) {
                        queue.addFirst(s);
                    } else {
                        queue.addLast(s);
                    }
                }
            }
        }
        return dist;
    }

    /** Whether a UTF-8 byte begins a character (is not a continuation byte). */
    static boolean startsCharacter(int b) {
        return (b & 0xC0) != 0x80;
    }
}
