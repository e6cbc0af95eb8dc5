package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a required tool choice's output, <code>[{"name": ..., "parameters": {...}}, ...]</code>
 * (guided, so a prefix of such a list: the name before the parameters, as the schema orders
 * them), as it is written: each call's name once its string closes, then its parameters' text as
 * it comes, up to the brace that closes them. The streamed chunks and the whole answer are both
 * read by it, so they hold the same calls with the same arguments' text. Not thread-safe; one per
 * response.
 */
final class RequiredCallsScanner {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What a piece of output settled: a call's name (its index), or more of a call's arguments. */
    record Event(int index, String name, String arguments) {
    }

    /** A call read so far: its name, its arguments' text (partial if the output stopped inside them). */
    record Call(String name, String arguments) {
    }

    private final StringBuilder text = new StringBuilder();
    private final List<String> names = new ArrayList<>();
    private final List<StringBuilder> arguments = new ArrayList<>();
    private int pos;
    private int depth;
    private boolean inString;
    private boolean escape;
    private int stringStart;
    /** At the item's level: whether the next string is a key (after '{' or ','), or a value (after ':'). */
    private boolean expectKey;
    private String lastString;
    private String key;
    /** Where the current call's parameters began (their '{'), -1 outside them. */
    private int argsFrom = -1;
    private int argsSent;
    private boolean complete;

    /**
     * Takes the next piece of output.
     *
     * @param piece text the model wrote
     * @return the names and argument fragments it settled, in order
     */
    List<Event> add(String piece) {
        text.append(piece);
        List<Event> out = new ArrayList<>();
        for (; pos < text.length(); pos++) {
            step(text.charAt(pos), out);
        }
        if (argsFrom >= 0 && argsSent < text.length()) {
            // everything read is inside the parameters: the closing brace has not come
            emitArguments(text.length(), out);
        }
        return out;
    }

    private void step(char c, List<Event> out) {
        if (inString) {
            if (escape) {
                escape = false;
            } else if (c == '\\') {
                escape = true;
            } else if (c == '"') {
                inString = false;
                if (depth == 2) {
                    lastString = decode(text.substring(stringStart, pos + 1));
                    if (!expectKey && "name".equals(key) && names.size() == arguments.size()) {
                        names.add(lastString);
                        arguments.add(new StringBuilder());
                        out.add(new Event(names.size() - 1, lastString, null));
                    }
                }
            }
            return;
        }
        switch (c) {
            case '"' -> {
                inString = true;
                stringStart = pos;
            }
            case '{', '[' -> {
                depth++;
                if (depth == 2) {
                    expectKey = true;
                    key = null;
                } else if (depth == 3 && c == '{' && "parameters".equals(key) && argsFrom < 0 && !names.isEmpty()) {
                    argsFrom = pos;
                    argsSent = pos;
                }
            }
            case '}', ']' -> {
                if (depth == 3 && argsFrom >= 0 && c == '}') {
                    emitArguments(pos + 1, out);
                    argsFrom = -1;
                }
                depth--;
                if (depth == 0 && c == ']') {
                    complete = true;
                }
            }
            case ':' -> {
                if (depth == 2 && expectKey) {
                    key = lastString;
                    expectKey = false;
                }
            }
            case ',' -> {
                if (depth == 2) {
                    expectKey = true;
                }
            }
            default -> {
                // whitespace, and the characters of numbers and literals inside the parameters
            }
        }
    }

    private void emitArguments(int upTo, List<Event> out) {
        String fragment = text.substring(argsSent, upTo);
        argsSent = upTo;
        if (!fragment.isEmpty()) {
            arguments.get(arguments.size() - 1).append(fragment);
            out.add(new Event(arguments.size() - 1, null, fragment));
        }
    }

    private static String decode(String literal) {
        try {
            return JSON.readValue(literal, String.class);
        } catch (IOException e) {
            return literal.substring(1, literal.length() - 1);
        }
    }

    /**
     * The calls read so far, in order.
     *
     * @return each call's name and arguments' text
     */
    List<Call> calls() {
        List<Call> out = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            out.add(new Call(names.get(i), arguments.get(i).toString()));
        }
        return out;
    }

    /**
     * Whether the list closed: every call is whole.
     *
     * @return true after the closing bracket
     */
    boolean complete() {
        return complete;
    }

    /**
     * The output so far.
     *
     * @return its text
     */
    String text() {
        return text.toString();
    }
}
