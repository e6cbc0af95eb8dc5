package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * OpenAI's request fields that would change the answer in a way this server cannot honour: a 400
 * naming the field rather than an answer that silently differs from what was asked. Fields that
 * change nothing a client sees ({@code user}, {@code metadata}, {@code store},
 * {@code service_tier}, {@code prediction}, which only speeds OpenAI's answers up) are ignored, as
 * vLLM ignores them.
 */
final class RequestFields {
    private RequestFields() {
    }

    /**
     * Refuses the fields this server cannot honour.
     *
     * @throws ApiException 400 naming the first such field present and not null
     */
    static void refuseUnsupported(ObjectNode body) {
        JsonNode m = body.get("modalities");
        if (m != null && !m.isNull()) {
            if (!m.isArray()) {
                throw ApiException.invalid("modalities", "modalities must be a list, not " + OpenAiRequests.kind(m));
            }
            for (JsonNode e : m) {
                if (!"text".equals(e.asText(null))) {
                    throw ApiException.invalid("modalities", "modalities: only [\"text\"] is supported; this server"
                            + " answers no " + (e.isTextual() ? e.textValue() : OpenAiRequests.kind(e)));
                }
            }
        }
        refuse(body, "audio", "audio: audio output is not supported; leave it out (and modalities [\"text\"])");
        refuse(body, "web_search_options", "web_search_options: this server does not search the web; leave it out");
    }

    private static void refuse(ObjectNode body, String field, String message) {
        JsonNode n = body.get(field);
        if (n != null && !n.isNull()) {
            throw ApiException.invalid(field, message);
        }
    }
}
