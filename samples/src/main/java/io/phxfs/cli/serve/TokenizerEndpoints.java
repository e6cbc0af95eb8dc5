package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.core.Phoenix;

/**
 * vLLM's endpoints beside OpenAI's that clients use to count and check tokens:
 * {@code POST /tokenize} (a {@code prompt}, or chat {@code messages} rendered by the template),
 * {@code POST /detokenize} and {@code GET /version}, in vLLM's shapes. {@code model} may be left
 * out; given, it must be the served name.
 */
final class TokenizerEndpoints {
    private TokenizerEndpoints() {
    }

    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /**
     * {@code POST /tokenize}: <code>{"count", "max_model_len", "tokens", "token_strs"}</code>. A
     * {@code prompt} is tokenized with the special tokens unless {@code add_special_tokens} is
     * false; {@code messages} are rendered with the generation prompt unless
     * {@code add_generation_prompt} is false, as for a chat completion.
     */
    static Endpoint tokenize(ServeContext ctx) {
        return ex -> {
            ObjectNode body = body(ex, ctx);
            if (BodyFields.bool(body, "return_token_strs", false)) {
                // vLLM's convert_ids_to_tokens strings: not kept by this tokenizer, so refused rather than left null
                throw ApiException.invalid("return_token_strs", "return_token_strs: not supported (token_strs is"
                        + " always null here); leave it out or false");
            }
            int[] ids;
            if (body.has("messages")) {
                ids = ChatCompletionsEndpoint.promptIds(ctx, OpenAiRequests.chat(body),
                        BodyFields.bool(body, "add_generation_prompt", true));
            } else {
                JsonNode p = body.get("prompt");
                if (p == null || !p.isTextual()) {
                    throw ApiException.invalid("prompt", "prompt: required, a string (or give messages)");
                }
                ids = ctx.engine().tokenizer().encode(p.textValue(), BodyFields.bool(body, "add_special_tokens", true));
            }
            ObjectNode n = F.objectNode();
            n.put("count", ids.length);
            n.put("max_model_len", ctx.engine().model().contextLength());
            var tokens = n.putArray("tokens");
            for (int id : ids) {
                tokens.add(id);
            }
            n.putNull("token_strs");
            ex.sendJson(200, OpenAiJson.bytes(n));
        };
    }

    /** {@code POST /detokenize}: <code>{"tokens": [ids]}</code> to <code>{"prompt": text}</code>, special tokens kept. */
    static Endpoint detokenize(ServeContext ctx) {
        return ex -> {
            ObjectNode body = body(ex, ctx);
            JsonNode t = body.get("tokens");
            if (t == null || !t.isArray()) {
                throw ApiException.invalid("tokens", "tokens: required, a list of token ids");
            }
            int vocab = ctx.engine().model().vocabSize();
            int[] ids = new int[t.size()];
            for (int i = 0; i < ids.length; i++) {
                JsonNode e = t.get(i);
                if (!e.isIntegralNumber() || !e.canConvertToInt() || e.intValue() < 0 || e.intValue() >= vocab) {
                    throw ApiException.invalid("tokens", "tokens[" + i + "]: " + e + " is not a token id of this"
                            + " model (0 to " + (vocab - 1) + ")");
                }
                ids[i] = e.intValue();
            }
            ObjectNode n = F.objectNode();
            n.put("prompt", ctx.engine().tokenizer().decode(ids, false));
            ex.sendJson(200, OpenAiJson.bytes(n));
        };
    }

    /** {@code GET /version}: <code>{"version": "0.2.0"}</code>, Phoenix's. */
    static Endpoint version() {
        return ex -> {
            ObjectNode n = F.objectNode();
            n.put("version", Phoenix.bindingsVersion());
            ex.sendJson(200, OpenAiJson.bytes(n));
        };
    }

    private static ObjectNode body(Exchange ex, ServeContext ctx) throws java.io.IOException {
        ObjectNode body = OpenAiRequests.parse(ex.body(ctx.policy().maxBodyBytes()));
        JsonNode m = body.get("model");
        if (m != null && !m.isNull()) {
            OpenAiRequests.checkModel(body, ctx.servedName());
        }
        return body;
    }
}
