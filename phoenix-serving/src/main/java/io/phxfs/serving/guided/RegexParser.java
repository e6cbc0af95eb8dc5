package io.phxfs.serving.guided;

import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.util.automaton.Automata;
import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.Operations;

/**
 * Reads a regular expression in the syntax JSON Schema's {@code pattern} (ECMA-262) and vLLM's
 * {@code guided_regex} (Python's {@code re}) share, and builds the automaton of the strings it
 * matches whole, over code points, with Lucene's automaton operations. Full-match semantics, as
 * xgrammar and outlines give a pattern: a string the guide lets through matches the pattern
 * anywhere, as JSON Schema asks, and from its start to its end, as {@code re.fullmatch}.
 *
 * <p>Where the two syntaxes differ, the narrower reading is taken, so that an output is a match
 * under both: {@code \d}, {@code \w} and {@code \s} are their ASCII classes (Python's Unicode ones
 * contain them), and {@code .} leaves out the line terminators of ECMA-262 and Java (Python's
 * {@code .} leaves out only the newline). Constructs
 * that no finite automaton enforces or whose meaning the two disagree on are refused naming the
 * construct and its position: lookarounds, backreferences, word boundaries, inline flags,
 * possessive quantifiers, Unicode properties, {@code ^} and {@code $} other than at the ends.
 */
final class RegexParser {
    /** The largest bound of a counted repetition: each count is a copy of its atom's states. */
    static final int MAX_REPEAT = 1000;
    private static final int MAX_CODE_POINT = Character.MAX_CODE_POINT;
    /** The most states a pattern's automaton may have before it is made deterministic. */
    static final int MAX_STATES = 100_000;
    /** The deepest nesting of groups (the parser recurses once a level). */
    static final int MAX_DEPTH = 200;
    // \d \w \s: their ASCII reading (contained in ECMA-262's and Python's) where they stand as
    // themselves, and the union of both dialects' readings where they are negated (\D, [^\s]),
    // so that either way the result is contained in what both dialects match
    private static final int[][] DIGIT = {{'0', '9'}};
    private static final int[][] WORD = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    private static final int[][] SPACE = {{'\t', '\r'}, {' ', ' '}};
    private static final int[][] WIDE_DIGIT = unicode(c -> Character.getType(c) == Character.DECIMAL_DIGIT_NUMBER);
    private static final int[][] WIDE_WORD = unicode(c -> c == '_' || Character.isLetterOrDigit(c)
            || ((1 << Character.getType(c)) & (1 << Character.LETTER_NUMBER | 1 << Character.OTHER_NUMBER
            | 1 << Character.NON_SPACING_MARK | 1 << Character.COMBINING_SPACING_MARK | 1 << Character.ENCLOSING_MARK
            | 1 << Character.CONNECTOR_PUNCTUATION)) != 0);
    /** ECMA-262's WhiteSpace and LineTerminator and Python's str.isspace(), together. */
    private static final int[][] WIDE_SPACE = unicode(c -> Character.isWhitespace(c) || Character.isSpaceChar(c)
            || c == 0x85 || c == 0xFEFF || (c >= 0x1C && c <= 0x1F));
    /** ECMA-262's line terminators, and U+0085 (NEL), which Java's {@code .} leaves out too. */
    private static final int[][] LINE_TERMINATORS = {{'\n', '\n'}, {'\r', '\r'}, {0x85, 0x85}, {0x2028, 0x2029}};

    private final String pattern;
    private final int[] cps;
    private int at;
    private int depth;

    private RegexParser(String pattern) {
        this.pattern = pattern;
        this.cps = pattern.codePoints().toArray();
    }

    /**
     * The automaton of the strings {@code pattern} matches whole.
     *
     * @throws UnsupportedPatternException for syntax errors and refused constructs
     */
    static Automaton parse(String pattern) {
        RegexParser p = new RegexParser(pattern);
        Automaton a = p.alternation();
        if (p.at < p.cps.length) {
            throw p.error(p.cps[p.at] == ')' ? "unbalanced ')'" : "unexpected '" + Character.toString(p.cps[p.at]) + "'");
        }
        return a;
    }

    private UnsupportedPatternException error(String reason) {
        return new UnsupportedPatternException(pattern, Math.min(at, cps.length), reason);
    }

    private boolean more() {
        return at < cps.length;
    }

    private int peek() {
        return cps[at];
    }

    private boolean eat(int c) {
        if (more() && cps[at] == c) {
            at++;
            return true;
        }
        return false;
    }

    private Automaton alternation() {
        List<Automaton> branches = new ArrayList<>();
        do {
            branches.add(concatenation());
        } while (eat('|'));
        return checked(branches.size() == 1 ? branches.get(0) : Operations.union(branches));
    }

    private Automaton concatenation() {
        List<Automaton> parts = new ArrayList<>();
        int start = at;
        while (more() && peek() != '|' && peek() != ')') {
            int c = peek();
            if (c == '^') {
                // an anchor means nothing under full-match semantics where it stands at the start
                if (depth > 0 || at != start) {
                    throw error("'^' other than at the start of the pattern or of a top-level alternative");
                }
                at++;
                start = at;
                continue;
            }
            if (c == '$') {
                at++;
                if (depth > 0 || (more() && peek() != '|')) {
                    at--;
                    throw error("'$' other than at the end of the pattern or of a top-level alternative");
                }
                continue;
            }
            parts.add(quantified(atom()));
        }
        return checked(parts.isEmpty() ? Automata.makeEmptyString() : Operations.concatenate(parts));
    }

    private Automaton checked(Automaton a) {
        if (a.getNumStates() > MAX_STATES) {
            throw error("a pattern whose automaton would exceed " + MAX_STATES + " states");
        }
        return a;
    }

    private Automaton quantified(Automaton atom) {
        Automaton a = atom;
        while (more()) {
            int c = peek();
            int min;
            int max;
            int before = at;
            if (c == '*') {
                at++;
                min = 0;
                max = -1;
            } else if (c == '+') {
                at++;
                min = 1;
                max = -1;
            } else if (c == '?') {
                at++;
                min = 0;
                max = 1;
            } else if (c == '{' && counted()) {
                at++;
                min = number();
                max = min;
                if (eat(',')) {
                    max = more() && peek() == '}' ? -1 : number();
                }
                at++; // '}'
                if (max >= 0 && max < min) {
                    at = before;
                    throw error("a repetition {" + min + "," + max + "} whose bounds are out of order");
                }
                if (min > MAX_REPEAT || max > MAX_REPEAT) {
                    at = before;
                    throw error("a repetition bound above " + MAX_REPEAT);
                }
            } else {
                return a;
            }
            if (eat('+')) {
                at--;
                throw error("a possessive quantifier");
            }
            eat('?'); // lazy: the same language
            long copies = Math.max(1, max < 0 ? min + 1L : max);
            if (copies * a.getNumStates() > MAX_STATES) {
                at = before;
                throw error("a repetition whose automaton would exceed " + MAX_STATES + " states");
            }
            a = max < 0 ? (min == 0 ? Operations.repeat(a) : Operations.repeat(a, min))
                    : min == 0 && max == 1 ? Operations.optional(a) : Operations.repeat(a, min, max);
            if (more() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{' && counted())) {
                throw error("a quantifier after a quantifier (both dialects refuse it)");
            }
        }
        return a;
    }

    /** Whether a counted repetition {@code {n}}, {@code {n,}} or {@code {n,m}} starts here (else '{' is a literal). */
    private boolean counted() {
        if (at + 1 < cps.length && cps[at + 1] == ',') {
            throw error("a repetition {,n} (Python's 0 to n, ECMA-262's literal text)");
        }
        int i = at + 1;
        int digits = 0;
        while (i < cps.length && cps[i] >= '0' && cps[i] <= '9') {
            i++;
            digits++;
        }
        if (digits == 0) {
            return false;
        }
        if (i < cps.length && cps[i] == ',') {
            i++;
            while (i < cps.length && cps[i] >= '0' && cps[i] <= '9') {
                i++;
            }
        }
        return i < cps.length && cps[i] == '}';
    }

    private int number() {
        long n = 0;
        while (more() && peek() >= '0' && peek() <= '9') {
            n = Math.min(Integer.MAX_VALUE, n * 10 + (cps[at++] - '0'));
        }
        return (int) n;
    }

    private Automaton atom() {
        int c = cps[at];
        switch (c) {
            case '(' -> {
                int open = at;
                at++;
                if (eat('?')) {
                    boolean named = false;
                    if (more() && peek() == 'P' && at + 1 < cps.length && cps[at + 1] == '<') {
                        at += 2; // Python's (?P<name>...)
                        named = true;
                    } else if (more() && peek() == '<' && at + 1 < cps.length && cps[at + 1] != '=' && cps[at + 1] != '!') {
                        at++; // ECMA's (?<name>...)
                        named = true;
                    } else if (!eat(':')) {
                        at = open;
                        throw error("'(?' constructs other than (?:...) and named groups (lookarounds, inline flags,"
                                + " named backreferences)");
                    }
                    if (named) {
                        while (more() && peek() != '>') {
                            at++;
                        }
                        if (!eat('>')) {
                            throw error("an unterminated group name");
                        }
                    }
                }
                if (++depth > MAX_DEPTH) {
                    at = open;
                    throw error("groups nested deeper than " + MAX_DEPTH);
                }
                Automaton inner = alternation();
                depth--;
                if (!eat(')')) {
                    throw error("a missing ')'");
                }
                return inner;
            }
            case '[' -> {
                return charClass();
            }
            case '.' -> {
                at++;
                return Automata.makeCharClass(starts(complement(LINE_TERMINATORS)), ends(complement(LINE_TERMINATORS)));
            }
            case '\\' -> {
                return escape();
            }
            case '*', '+', '?' -> throw error("a quantifier with nothing to repeat");
            case '{' -> {
                if (counted()) {
                    throw error("a quantifier with nothing to repeat");
                }
                at++;
                return Automata.makeChar(c);
            }
            case ')' -> throw error("unbalanced ')'");
            default -> {
                if (c >= Character.MIN_SURROGATE && c <= Character.MAX_SURROGATE) {
                    throw error("a lone surrogate, which no UTF-8 text holds");
                }
                at++;
                return Automata.makeChar(c);
            }
        }
    }

    private Automaton escape() {
        int[][] set = classEscape();
        if (set != null) {
            return Automata.makeCharClass(starts(set), ends(set));
        }
        return Automata.makeChar(charEscape(false));
    }

    /** A class escape (\d \D \w \W \s \S) at {@code at} (on the backslash), consumed; null if it is not one. */
    /** The ranges of the code points {@code member} holds (surrogates aside). */
    private static int[][] unicode(java.util.function.IntPredicate member) {
        List<int[]> out = new ArrayList<>();
        int start = -1;
        for (int c = 0; c <= MAX_CODE_POINT + 1; c++) {
            boolean in = c <= MAX_CODE_POINT && member.test(c);
            if (in && start < 0) {
                start = c;
            } else if (!in && start >= 0) {
                out.add(new int[] {start, c - 1});
                start = -1;
            }
        }
        return normalize(out.toArray(new int[0][]));
    }

    private int[][] classEscape() {
        return classEscape(false);
    }

    /**
     * A class escape; {@code negated}: it stands in a negated class, whose complement must still
     * be contained in both dialects' readings, so it takes its widest reading there.
     */
    private int[][] classEscape(boolean negated) {
        if (at + 1 >= cps.length) {
            at++;
            throw error("a trailing backslash");
        }
        int[][] set = switch (cps[at + 1]) {
            case 'd' -> negated ? WIDE_DIGIT : DIGIT;
            case 'D' -> complement(negated ? DIGIT : WIDE_DIGIT);
            case 'w' -> negated ? WIDE_WORD : WORD;
            case 'W' -> complement(negated ? WORD : WIDE_WORD);
            case 's' -> negated ? WIDE_SPACE : SPACE;
            case 'S' -> complement(negated ? SPACE : WIDE_SPACE);
            default -> null;
        };
        if (set != null) {
            at += 2;
        }
        return set;
    }

    /** The code point of a character escape at {@code at} (on the backslash), consumed. */
    private int charEscape(boolean inClass) {
        int start = at;
        at++;
        int c = cps[at++];
        switch (c) {
            case 'n' -> {
                return '\n';
            }
            case 'r' -> {
                return '\r';
            }
            case 't' -> {
                return '\t';
            }
            case 'f' -> {
                return '\f';
            }
            case 'v' -> {
                return 0x0B;
            }
            case '0' -> {
                if (more() && peek() >= '0' && peek() <= '9') {
                    at = start;
                    throw error("an octal escape");
                }
                return 0;
            }
            case 'x' -> {
                return hex(2);
            }
            case 'u' -> {
                int cp;
                if (more() && peek() == '{') {
                    at = start;
                    throw error("a \\u{...} escape (ECMA-262 reads it so only with its u flag, Python not at all)");
                }
                cp = hex(4);
                if (Character.isHighSurrogate((char) cp) && at + 1 < cps.length && cps[at] == '\\' && cps[at + 1] == 'u') {
                    int save = at;
                    at += 2;
                    int low = hex(4);
                    if (Character.isLowSurrogate((char) low)) {
                        return Character.toCodePoint((char) cp, (char) low);
                    }
                    at = save;
                }
                if (cp > MAX_CODE_POINT || (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE)) {
                    at = start;
                    throw error("an escape of a lone surrogate or of no code point");
                }
                return cp;
            }
            case 'b' -> {
                if (inClass) {
                    return 0x08; // backspace, inside a class
                }
                at = start;
                throw error("a word boundary (\\b)");
            }
            default -> {
                if (c >= '1' && c <= '9' || c == 'k') {
                    at = start;
                    throw error("a backreference");
                }
                if (c == 'B' || c == 'A' || c == 'Z' || c == 'z' || c == 'G') {
                    at = start;
                    throw error("an anchor or boundary escape (\\" + Character.toString(c) + ")");
                }
                if (c == 'p' || c == 'P') {
                    at = start;
                    throw error("a Unicode property class");
                }
                if (c < 0x80 && Character.isLetterOrDigit(c)) {
                    at = start;
                    throw error("an unknown escape \\" + Character.toString(c));
                }
                return c; // an escaped symbol stands for itself
            }
        }
    }

    private int hex(int n) {
        if (at + n > cps.length) {
            throw error("a short hexadecimal escape");
        }
        int v = parseHex(at, at + n);
        at += n;
        return v;
    }

    private int parseHex(int from, int to) {
        int v = 0;
        for (int i = from; i < to; i++) {
            int d = Character.digit(cps[i], 16);
            if (d < 0) {
                at = i;
                throw error("a hexadecimal escape with a non-hex digit");
            }
            v = v * 16 + d;
        }
        return v;
    }

    private Automaton charClass() {
        int open = at;
        at++;
        boolean negated = eat('^');
        if (more() && peek() == ']') {
            throw error("']' first in a class (ECMA-262 and Python read it differently)");
        }
        List<int[]> ranges = new ArrayList<>();
        while (more() && peek() != ']') {
            int[][] set = peek() == '\\' ? classEscape(negated) : null;
            if (set != null) {
                for (int[] r : set) {
                    ranges.add(r);
                }
                continue;
            }
            if (peek() == '[' && at + 1 < cps.length && (cps[at + 1] == ':' || cps[at + 1] == '=' || cps[at + 1] == '.')) {
                throw error("a POSIX class or collating element");
            }
            int lo = classChar();
            if (more() && peek() == '-' && at + 1 < cps.length && cps[at + 1] != ']') {
                at++;
                if (peek() == '\\' && at + 1 < cps.length && "dDwWsS".indexOf(cps[at + 1]) >= 0) {
                    throw error("a range that ends in a class escape");
                }
                int hi = classChar();
                if (hi < lo) {
                    throw error("a range out of order");
                }
                ranges.add(new int[] {lo, hi});
            } else {
                ranges.add(new int[] {lo, lo});
            }
        }
        if (!eat(']')) {
            at = open;
            throw error("an unterminated character class");
        }
        int[][] set = normalize(ranges.toArray(new int[0][]));
        if (negated) {
            set = complement(set);
        }
        return Automata.makeCharClass(starts(set), ends(set));
    }

    private int classChar() {
        int c = peek();
        if (c == '\\') {
            return charEscape(true);
        }
        at++;
        return c;
    }

    /** Sorted, merged ranges without the surrogates (which no UTF-8 text holds). */
    private static int[][] normalize(int[][] ranges) {
        int[][] r = ranges.clone();
        java.util.Arrays.sort(r, (x, y) -> Integer.compare(x[0], y[0]));
        List<int[]> out = new ArrayList<>();
        for (int[] x : r) {
            int[] last = out.isEmpty() ? null : out.get(out.size() - 1);
            if (last != null && x[0] <= last[1] + 1) {
                last[1] = Math.max(last[1], x[1]);
            } else {
                out.add(new int[] {x[0], x[1]});
            }
        }
        List<int[]> clean = new ArrayList<>();
        for (int[] x : out) {
            if (x[1] < Character.MIN_SURROGATE || x[0] > Character.MAX_SURROGATE) {
                clean.add(x);
                continue;
            }
            if (x[0] < Character.MIN_SURROGATE) {
                clean.add(new int[] {x[0], Character.MIN_SURROGATE - 1});
            }
            if (x[1] > Character.MAX_SURROGATE) {
                clean.add(new int[] {Character.MAX_SURROGATE + 1, x[1]});
            }
        }
        return clean.toArray(new int[0][]);
    }

    /** Every code point but the surrogates and those of {@code set}. */
    static int[][] complement(int[][] set) {
        int[][] s = normalize(set);
        List<int[]> out = new ArrayList<>();
        int next = 0;
        for (int[] r : s) {
            if (r[0] > next) {
                out.add(new int[] {next, r[0] - 1});
            }
            next = r[1] + 1;
        }
        if (next <= MAX_CODE_POINT) {
            out.add(new int[] {next, MAX_CODE_POINT});
        }
        return normalize(out.toArray(new int[0][]));
    }

    static int[] starts(int[][] set) {
        int[] s = new int[set.length];
        for (int i = 0; i < set.length; i++) {
            s[i] = set[i][0];
        }
        return s;
    }

    static int[] ends(int[][] set) {
        int[] e = new int[set.length];
        for (int i = 0; i < set.length; i++) {
            e[i] = set[i][1];
        }
        return e;
    }
}
