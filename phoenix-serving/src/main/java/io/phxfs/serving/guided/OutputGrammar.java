package io.phxfs.serving.guided;

/**
 * The language a guided output must belong to: JSON matching a schema ({@link JsonSchemaMatcher})
 * or text matching a regular expression or one of a list of choices ({@link TextGrammar}). Read a
 * byte at a time from {@link #start()}. Implementations are immutable and shared between requests.
 */
public sealed interface OutputGrammar permits JsonSchemaMatcher, TextGrammar {
    /**
     * The state before the first byte.
     *
     * @return the initial state
     */
    MatchState start();
}
