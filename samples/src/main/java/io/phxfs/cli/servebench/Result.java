package io.phxfs.cli.servebench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.Locale;

/**
 * One run's figures.
 *
 * @param tier the KV setting
 * @param concurrency clients at once
 * @param ttft seconds to the first token, one per request
 * @param firstTtft the first request's (the one sent first): after a restart, the request whose
 *        prefix comes from the tier itself, where the later ones may find it resident already
 * @param itl seconds between tokens, all requests together
 * @param completionTokens tokens generated in all
 * @param promptTokens prompt tokens in all
 * @param cachedTokens prompt tokens served from the prefix cache
 * @param wallSeconds the run's duration
 * @param texts each request's generated text, by prompt index
 */
record Result(String tier, int concurrency, double[] ttft, double firstTtft, double[] itl, long completionTokens, long promptTokens,
              long cachedTokens, double wallSeconds, String[] texts) {
    Result named(String t, int c) {
        return new Result(t, c, ttft, firstTtft, itl, completionTokens, promptTokens, cachedTokens, wallSeconds, texts);
    }

    /** How many of this run's outputs equal {@code base}'s for the same prompt (greedy, same prompts). */
    int sameOutputs(Result base) {
        int n = 0;
        for (int i = 0; i < Math.min(texts.length, base.texts.length); i++) {
            n += java.util.Objects.equals(texts[i], base.texts[i]) ? 1 : 0;
        }
        return n;
    }

    static double percentile(double[] v, double p) {
        if (v.length == 0) {
            return Double.NaN;
        }
        double[] s = v.clone();
        Arrays.sort(s);
        int i = (int) Math.ceil(p / 100 * s.length) - 1;
        return s[Math.max(0, Math.min(s.length - 1, i))];
    }

    double ttftP50() {
        return percentile(ttft, 50);
    }

    double ttftP99() {
        return percentile(ttft, 99);
    }

    double itlP50() {
        return percentile(itl, 50);
    }

    double itlP99() {
        return percentile(itl, 99);
    }

    double outputTokensPerSecond() {
        return completionTokens / wallSeconds;
    }

    double hitRate() {
        return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
    }

    String summary() {
        return String.format(Locale.ROOT, "ttft p50 %.1f ms, p99 %.1f ms; itl p50 %.1f ms; %.1f output tokens/s; prefix hits %.1f%%",
                ttftP50() * 1e3, ttftP99() * 1e3, itlP50() * 1e3, outputTokensPerSecond(), 100 * hitRate());
    }

    ObjectNode json(ObjectMapper m) {
        ObjectNode n = m.createObjectNode();
        n.put("tier", tier);
        n.put("concurrency", concurrency);
        n.put("ttft_p50_s", ServeBench.round(ttftP50() * 1e3) / 1e3);
        n.put("ttft_p99_s", ServeBench.round(ttftP99() * 1e3) / 1e3);
        n.put("ttft_first_s", ServeBench.round(firstTtft * 1e3) / 1e3);
        n.put("itl_p50_s", ServeBench.round(itlP50() * 1e3) / 1e3);
        n.put("itl_p99_s", ServeBench.round(itlP99() * 1e3) / 1e3);
        n.put("output_tokens_per_s", ServeBench.round(outputTokensPerSecond()));
        n.put("prefix_hit_rate", ServeBench.round(hitRate()));
        n.put("completion_tokens", completionTokens);
        n.put("prompt_tokens", promptTokens);
        n.put("cached_tokens", cachedTokens);
        n.put("wall_s", ServeBench.round(wallSeconds));
        return n;
    }
}
