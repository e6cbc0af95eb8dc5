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
        return ex -> ex.sendJson(200, OpenAiJson.models(ctx.servedName(), created(ctx.engine())));
    }

    /** {@code GET /v1/models/NAME}: the model, or 404. */
    static Endpoint model(ServeContext ctx) {
        return ex -> {
            String name = ex.path().substring(MODEL_PREFIX.length());
            if (!name.equals(ctx.servedName())) {
                throw new ApiException(404, ApiException.INVALID_REQUEST, "The model `" + name
                        + "` does not exist. This server serves `" + ctx.servedName() + "`.", "model",
                        "model_not_found");
            }
            ex.sendJson(200, OpenAiJson.modelCard(ctx.servedName(), created(ctx.engine())));
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

    private static long created(GenerationEngine engine) {
        return engine.model().created();
    }
}
