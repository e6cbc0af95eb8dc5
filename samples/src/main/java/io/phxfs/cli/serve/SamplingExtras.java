package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.SamplingParams;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sampling and stopping fields beyond temperature, top_p, top_k, seed, max_tokens, stop and
 * ignore_eos, as vLLM's request models take them: OpenAI's {@code presence_penalty},
 * {@code frequency_penalty} and {@code logit_bias}, and vLLM's {@code repetition_penalty},
 * {@code min_p}, {@code min_tokens}, {@code stop_token_ids}, {@code include_stop_str_in_output}
 * and {@code skip_special_tokens}. Null or absent is the default; a wrong type is a 400 naming
 * the field (the ranges are {@link SamplingParams}').
 *
 * @param logitBias token id to bias; the ids are checked against the vocabulary by {@link GenerationEndpoint}
 */
record SamplingExtras(double minP, double presencePenalty, double frequencyPenalty, double repetitionPenalty,
                      Map<Integer, Double> logitBias, int minTokens, List<Integer> stopTokenIds,
                      boolean includeStopStrInOutput, boolean skipSpecialTokens) {
    static SamplingExtras read(ObjectNode body) {
        return new SamplingExtras(BodyFields.number(body, "min_p", 0), BodyFields.number(body, "presence_penalty", 0),
                BodyFields.number(body, "frequency_penalty", 0), BodyFields.number(body, "repetition_penalty", 1), logitBias(body),
                minTokens(body), stopTokenIds(body), BodyFields.bool(body, "include_stop_str_in_output", false),
                BodyFields.bool(body, "skip_special_tokens", true));
    }

    /** {@code base} with these fields. */
    SamplingParams apply(SamplingParams base) {
        return base.withMinP(minP).withPenalties(presencePenalty, frequencyPenalty, repetitionPenalty, logitBias)
                .withStopping(minTokens, stopTokenIds, includeStopStrInOutput, skipSpecialTokens);
    }

    private static int minTokens(ObjectNode body) {
        JsonNode n = body.get("min_tokens");
        if (n == null || n.isNull()) {
            return 0;
        }
        if (!n.isNumber() || !n.canConvertToExactIntegral() || !n.canConvertToInt()) {
            throw ApiException.invalid("min_tokens", "min_tokens must be an integer, not " + OpenAiRequests.kind(n));
        }
        return n.asInt();
    }

    /** OpenAI's shape: an object whose keys are token ids (as strings) and values numbers. */
    private static Map<Integer, Double> logitBias(ObjectNode body) {
        JsonNode n = body.get("logit_bias");
        if (n == null || n.isNull()) {
            return Map.of();
        }
        if (!n.isObject()) {
            throw ApiException.invalid("logit_bias", "logit_bias must be an object of token ids to numbers, not "
                    + OpenAiRequests.kind(n));
        }
        Map<Integer, Double> out = new LinkedHashMap<>();
        for (var e : n.properties()) {
            int id;
            try {
                id = Integer.parseInt(e.getKey().strip());
            } catch (NumberFormatException x) {
                throw ApiException.invalid("logit_bias", "logit_bias: \"" + abbreviate(e.getKey())
                        + "\" is not a token id");
            }
            if (!e.getValue().isNumber()) {
                throw ApiException.invalid("logit_bias", "logit_bias: the bias of token " + id + " must be a number, not "
                        + OpenAiRequests.kind(e.getValue()));
            }
            out.put(id, e.getValue().doubleValue());
        }
        return out;
    }

    private static List<Integer> stopTokenIds(ObjectNode body) {
        JsonNode n = body.get("stop_token_ids");
        if (n == null || n.isNull()) {
            return List.of();
        }
        if (!n.isArray()) {
            throw ApiException.invalid("stop_token_ids", "stop_token_ids must be a list of token ids, not "
                    + OpenAiRequests.kind(n));
        }
        List<Integer> out = new ArrayList<>();
        for (JsonNode e : n) {
            if (!e.isIntegralNumber() || !e.canConvertToInt()) {
                throw ApiException.invalid("stop_token_ids", "stop_token_ids must be a list of token ids; found "
                        + OpenAiRequests.kind(e));
            }
            out.add(e.intValue());
        }
        return out;
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 37) + "...";
    }
}
