package io.phxfs.serving.guided;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.lucene.util.automaton.Automata;
import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.Operations;

/**
 * An output that is text of a regular language rather than JSON: vLLM's {@code guided_regex}
 * ({@code structured_outputs.regex}: the whole output matches the expression) and
 * {@code guided_choice} ({@code structured_outputs.choice}: the output is exactly one of the
 * strings). Immutable; may be shared between threads and requests.
 */
public final class TextGrammar implements OutputGrammar {
    private final MatchState start;
    private final ByteLanguage language;

    private TextGrammar(ByteLanguage language) {
        this.language = language;
        this.start = MatchState.initialText(language);
    }

    /** The bytes of the language's run table. */
    long tableBytes() {
        return language.tableBytes();
    }

    /**
     * The outputs that match {@code pattern} from start to end ({@code re.fullmatch}). The syntax
     * is what ECMA-262 and Python's {@code re} share: literals and escapes, classes with ranges
     * and negation, {@code \d \w \s} (ASCII) and their negations (everything but either
     * dialect's Unicode class), {@code .} (any character but a line terminator), groups
     * (capturing, {@code (?:...)} and named, nested up to 200 deep), alternation, and the
     * quantifiers {@code * + ? {n} {n,} {n,m}} (lazy or not; bounds up to 1000, automata up to
     * 100,000 states); {@code ^} and {@code $} at the ends.
     *
     * @param pattern the regular expression
     * @return the grammar
     * @throws UnsupportedPatternException naming the construct and where it is, for what it refuses:
     *         lookarounds, backreferences, word boundaries, inline flags, possessive and repeated
     *         quantifiers, Unicode property classes, <code>&#92;u{...}</code>, lone surrogates, anchors
     *         elsewhere than at the ends, and patterns past the size limits
     * @throws IllegalArgumentException where no text matches, or the pattern's automaton is too large to build
     */
    public static TextGrammar regex(String pattern) {
        Objects.requireNonNull(pattern, "pattern");
        return CompiledGrammars.get("regex " + pattern,
                () -> new TextGrammar(ByteLanguage.of(RegexParser.parse(pattern), "the regular expression")));
    }

    /**
     * The outputs that are exactly one of {@code choices}.
     *
     * @param choices the strings, at least one
     * @return the grammar
     * @throws IllegalArgumentException for an empty list, or a choice with a lone surrogate
     */
    public static TextGrammar choice(List<String> choices) {
        if (choices.isEmpty()) {
            throw new IllegalArgumentException("no choices: at least one string is needed");
        }
        List<Automaton> each = new ArrayList<>();
        for (int i = 0; i < choices.size(); i++) {
            String c = Objects.requireNonNull(choices.get(i), "a choice");
            for (int k = 0; k < c.length(); k++) {
                char ch = c.charAt(k);
                boolean paired = Character.isHighSurrogate(ch) ? k + 1 < c.length() && Character.isLowSurrogate(c.charAt(++k))
                        : !Character.isLowSurrogate(ch);
                if (!paired) {
                    throw new IllegalArgumentException("choice " + i + " holds a lone surrogate, which no UTF-8 text holds");
                }
            }
            each.add(Automata.makeString(c));
        }
        return new TextGrammar(ByteLanguage.of(Operations.union(each), "the choices"));
    }

    @Override
    public MatchState start() {
        return start;
    }
}
