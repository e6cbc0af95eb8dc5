package io.phxfs.serving.engine;

import java.util.List;

/**
 * Stop strings over streamed text: text that may be the start of a stop string is held back
 * until the next piece shows whether it is, and the text ends just before the first stop string
 * found, which is not returned (OpenAI's and vLLM's behaviour) unless asked for.
 */
final class StopStrings {
    private final List<String> stops;
    private final boolean include;
    private final int longest;
    private final StringBuilder held = new StringBuilder();
    private boolean stopped;

    StopStrings(List<String> stops) {
        this(stops, false);
    }

    /**
     * Stop strings whose match is released with the text before it or not.
     *
     * @param stops the stop strings
     * @param include whether the stop string found ends the text released (vLLM's include_stop_str_in_output)
     */
    StopStrings(List<String> stops, boolean include) {
        this.stops = stops;
        this.include = include;
        this.longest = stops.stream().mapToInt(String::length).max().orElse(0);
    }

    boolean stopped() {
        return stopped;
    }

    /** The text of {@code piece} that can be released now; after a stop, nothing more. */
    String accept(String piece) {
        if (stopped) {
            return "";
        }
        if (stops.isEmpty()) {
            return piece;
        }
        held.append(piece);
        int first = -1;
        int length = 0;
        for (String s : stops) {
            int at = held.indexOf(s);
            if (at >= 0 && (first < 0 || at < first)) {
                first = at;
                length = s.length();
            }
        }
        if (first >= 0) {
            stopped = true;
            String out = held.substring(0, include ? first + length : first);
            held.setLength(0);
            return out;
        }
        // keep the longest tail that is a prefix of some stop string
        int keep = 0;
        for (int k = Math.min(longest - 1, held.length()); k > 0; k--) {
            String tail = held.substring(held.length() - k);
            if (stops.stream().anyMatch(s -> s.startsWith(tail))) {
                keep = k;
                break;
            }
        }
        // never split a surrogate pair between release and hold
        int cut = held.length() - keep;
        if (cut > 0 && cut < held.length() && Character.isHighSurrogate(held.charAt(cut - 1))) {
            cut--;
        }
        String out = held.substring(0, cut);
        held.delete(0, cut);
        return out;
    }

    /** What was held back, at the end of a generation that no stop string ended. */
    String drain() {
        String out = stopped ? "" : held.toString();
        held.setLength(0);
        return out;
    }
}
