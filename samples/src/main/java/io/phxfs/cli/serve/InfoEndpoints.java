package io.phxfs.cli.serve;

import io.phxfs.serving.engine.GenerationEngine;

/** The endpoints that only tell: {@code GET /v1/models}, {@code /v1/models/NAME}, {@code /health}. */
final class InfoEndpoints {
    private InfoEndpoints() {
    }

    /** The path prefix of one model's card. */
    static final String MODEL_PREFIX = "/v1/models/";

    /** {@code GET /v1/models}: the one model served. */
    static Endpoint models(ServeContext ctx) {
        return ex -> ex.sendJson(200, OpenAiJson.models(ctx.servedName(), created(ctx.engine()),
                ctx.engine().model().contextLength()));
    }

    /** {@code GET /v1/models/NAME}: the model, or 404. */
    static Endpoint model(ServeContext ctx) {
        return ex -> {
            String name = modelId(ex);
            if (!name.equals(ctx.servedName())) {
                throw new ApiException(404, ApiException.INVALID_REQUEST, "The model `" + name
                        + "` does not exist. This server serves `" + ctx.servedName() + "`.", "model",
                        "model_not_found");
            }
            ex.sendJson(200, OpenAiJson.modelCard(ctx.servedName(), created(ctx.engine()),
                    ctx.engine().model().contextLength()));
        };
    }

    /** {@code GET /health}: 200 while the engine serves, 503 once its thread has stopped on an error. */
    static Endpoint health(ServeContext ctx) {
        return ex -> {
            if (ctx.engine().healthy()) {
                ex.sendJson(200, OpenAiJson.health("ok"));
            } else {
                throw new ApiException(503, ApiException.SERVER_ERROR, "the engine has stopped (see the server's log)", null, null);
            }
        };
    }

    /**
     * The id after {@code /v1/models/}: the SDKs encode it as a path parameter, so a name with a
     * slash ({@code org/model}) comes as {@code org%2Fmodel}, which Jetty leaves encoded in the
     * decoded (and normalized) path: that is decoded here.
     */
    static String modelId(Exchange ex) {
        String id = ex.path().substring(MODEL_PREFIX.length());
        if (id.endsWith("/")) {
            id = id.substring(0, id.length() - 1); // the router takes a trailing slash as none
        }
        if (id.indexOf('%') < 0) {
            return id;
        }
        StringBuilder out = new StringBuilder(id.length());
        java.io.ByteArrayOutputStream escaped = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < id.length(); i++) {
            int hi = id.charAt(i) == '%' && i + 2 < id.length() ? Character.digit(id.charAt(i + 1), 16) : -1;
            int lo = hi >= 0 ? Character.digit(id.charAt(i + 2), 16) : -1;
            if (lo >= 0) {
                escaped.write(hi * 16 + lo); // a run of escapes is one UTF-8 sequence
                i += 2;
                continue;
            }
            out.append(escaped.toString(java.nio.charset.StandardCharsets.UTF_8));
            escaped.reset();
            out.append(id.charAt(i));
        }
        return out.append(escaped.toString(java.nio.charset.StandardCharsets.UTF_8)).toString();
    }

    private static long created(GenerationEngine engine) {
        return engine.model().created();
    }
}
