package io.phxfs.cli.serve;

/**
 * An error answered in OpenAI's shape, {@code {"error": {"message", "type", "param", "code"}}},
 * with its HTTP status.
 */
final class ApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** OpenAI's type for a request the server will not take as it is (400, 404, 405, 413, 415). */
    static final String INVALID_REQUEST = "invalid_request_error";
    /** Type and code of the 429 answered while the waiting queue is full (OpenAI's code for its own 429s). */
    static final String RATE_LIMIT = "rate_limit_exceeded";
    /** OpenAI's type for a missing or wrong API key (401). */
    static final String AUTHENTICATION = "authentication_error";
    /** OpenAI's type for a failure of the server's own (500, 503). */
    static final String SERVER_ERROR = "server_error";

    private final int status;
    private final String type;
    private final String param;
    private final String code;

    ApiException(int status, String type, String message, String param, String code) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    /** A 400 about one field of the request. */
    static ApiException invalid(String param, String message) {
        return new ApiException(400, INVALID_REQUEST, message, param, null);
    }

    /**
     * A 400 from the engine's or SamplingParams' IllegalArgumentException, whose message begins
     * with the OpenAI field it is about ("max_tokens: ...", "prompt: ..."): that field is the param.
     */
    static ApiException fromEngine(IllegalArgumentException e) {
        String m = e.getMessage() == null ? e.toString() : e.getMessage();
        return invalid(paramOf(m), m);
    }

    /** The field a message names first ("top_p: 1.5 is not in (0, 1]" is about top_p), or null. */
    static String paramOf(String message) {
        int colon = message.indexOf(':');
        if (colon <= 0) {
            return null;
        }
        String head = message.substring(0, colon);
        return head.matches("[a-z][a-z_]*(\\[\\d+\\])?(\\.[a-z_]+)*") ? head : null;
    }

    int status() {
        return status;
    }

    String type() {
        return type;
    }

    String param() {
        return param;
    }

    String code() {
        return code;
    }
}
