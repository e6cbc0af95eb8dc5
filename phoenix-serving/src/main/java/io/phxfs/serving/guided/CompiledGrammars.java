package io.phxfs.serving.guided;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The grammars compiled lately, by their text: clients send the same schema, tool list or
 * expression with every request, and a pattern's automaton can take a good part of a second to
 * build. Grammars are immutable values, so one compiled for any request serves every other.
 * Bounded in count and in the bytes of regular languages' tables (least recently used out); read
 * on a request's way in, never during decoding.
 */
final class CompiledGrammars {
    private static final int KEPT = 128;
    /** The most bytes of regular languages' run tables kept (a pattern's may take megabytes). */
    private static final long KEPT_BYTES = 64L << 20;
    private static final Map<String, OutputGrammar> RECENT = new LinkedHashMap<>(32, 0.75f, true);
    private static long keptBytes;

    private CompiledGrammars() {
    }

    /**
     * The grammar compiled from {@code key}'s text, compiling it (outside the lock, so that one slow
     * compile holds up no other) where it is not kept. A compile that throws keeps nothing.
     */
    @SuppressWarnings("unchecked")
    static <G extends OutputGrammar> G get(String key, Supplier<G> compile) {
        synchronized (RECENT) {
            OutputGrammar g = RECENT.get(key);
            if (g != null) {
                return (G) g;
            }
        }
        G g = compile.get();
        long bytes = g instanceof TextGrammar t ? t.tableBytes() : 0;
        if (bytes > KEPT_BYTES / 4) {
            return g; // too big to keep: built again when asked again
        }
        synchronized (RECENT) {
            if (RECENT.putIfAbsent(key, g) == null) {
                keptBytes += bytes;
                var eldest = RECENT.entrySet().iterator();
                while ((RECENT.size() > KEPT || keptBytes > KEPT_BYTES) && eldest.hasNext()) {
                    OutputGrammar out = eldest.next().getValue();
                    keptBytes -= out instanceof TextGrammar t ? t.tableBytes() : 0;
                    eldest.remove();
                }
            }
        }
        return g;
    }
}
