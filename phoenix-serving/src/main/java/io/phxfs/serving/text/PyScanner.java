package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ext.ExtendedScanner;
import jinjava.de.odysseus.el.tree.impl.Scanner;

/**
 * jinjava's expression scanner with Python's string literals ({@code \u2581}, {@code \x41},
 * {@code \U0001F600}, octal, and unknown escapes kept as written) and a plain {@code +}
 * before digits ({@code loop.index0+1}; jinjava reads {@code +1} as its absolute-value operator).
 */
final class PyScanner extends ExtendedScanner {
    PyScanner(String input) {
        super(input);
    }

    @Override
    protected Token nextEval() throws ScanException {
        if (getInput().charAt(getPosition()) == '+') {
            return fixed(Scanner.Symbol.PLUS);
        }
        return super.nextEval();
    }

    @Override
    protected Token nextString() throws ScanException {
        builder.setLength(0);
        String in = getInput();
        char quote = in.charAt(getPosition());
        int i = getPosition() + 1;
        while (i < in.length()) {
            char c = in.charAt(i++);
            if (c == quote) {
                return token(Scanner.Symbol.STRING, builder.toString(), i - getPosition());
            }
            if (c != '\\') {
                builder.append(c);
                continue;
            }
            if (i == in.length()) {
                break;
            }
            char e = in.charAt(i++);
            switch (e) {
                case '\n' -> { }
                case '\\', '\'', '"' -> builder.append(e);
                case 'n' -> builder.append('\n');
                case 't' -> builder.append('\t');
                case 'r' -> builder.append('\r');
                case 'b' -> builder.append('\b');
                case 'f' -> builder.append('\f');
                case 'v' -> builder.append('\u000b');
                case 'a' -> builder.append('\u0007');
                case 'x', 'u', 'U' -> {
                    int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    if (i + digits > in.length() || !hex(in.substring(i, i + digits))) {
                        throw new ScanException(getPosition(), "truncated \\" + e + " escape", digits + " hex digits");
                    }
                    builder.appendCodePoint(Integer.parseInt(in.substring(i, i + digits), 16));
                    i += digits;
                }
                default -> {
                    if (e >= '0' && e <= '7') {
                        int end = i;
                        while (end < in.length() && end < i + 2 && in.charAt(end) >= '0' && in.charAt(end) <= '7') {
                            end++;
                        }
                        builder.appendCodePoint(Integer.parseInt(in.substring(i - 1, end), 8));
                        i = end;
                    } else {
                        builder.append('\\').append(e);
                    }
                }
            }
        }
        throw new ScanException(getPosition(), "unterminated string", String.valueOf(quote));
    }

    private static boolean hex(String s) {
        return s.chars().allMatch(ch -> Character.digit(ch, 16) >= 0);
    }
}
