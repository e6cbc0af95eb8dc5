package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Optional typed fields of a request body, a wrong type answered with a 400 naming the field. */
final class BodyFields {
    private BodyFields() {
    }

    /**
     * A number field.
     *
     * @param body the request
     * @param field its name
     * @param dflt the value when absent or null
     * @return the value
     * @throws ApiException 400 for a value that is not a number
     */
    static double number(ObjectNode body, String field, double dflt) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isNumber()) {
            throw ApiException.invalid(field, field + " must be a number, not " + OpenAiRequests.kind(n));
        }
        return n.doubleValue();
    }

    /**
     * A boolean field.
     *
     * @param body the request
     * @param field its name
     * @param dflt the value when absent or null
     * @return the value
     * @throws ApiException 400 for a value that is not true or false
     */
    static boolean bool(ObjectNode body, String field, boolean dflt) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isBoolean()) {
            throw ApiException.invalid(field, field + " must be a boolean, not " + OpenAiRequests.kind(n));
        }
        return n.booleanValue();
    }
}
