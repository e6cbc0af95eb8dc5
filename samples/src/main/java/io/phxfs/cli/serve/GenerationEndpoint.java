package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.GenerationHandle;
import io.phxfs.serving.engine.GenerationRequest;
import io.phxfs.serving.engine.QueueFullException;
import io.phxfs.serving.engine.SamplingParams;
import io.phxfs.serving.guided.OutputGrammar;
import io.phxfs.serving.guided.ReasoningGate;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;

/**
 * What {@code /v1/completions} and {@code /v1/chat/completions} share: read and check the body,
 * submit the prompt, then answer the whole completion or stream it. The engine's refusals
 * become OpenAI's errors: 429 for a full queue, 400 for a prompt it will not take (past the
 * context, ids outside the vocabulary), 503 while it shuts down.
 */
abstract class GenerationEndpoint implements Endpoint {
    final ServeContext ctx;

    GenerationEndpoint(ServeContext ctx) {
        this.ctx = ctx;
    }

    /**
     * A request ready for the engine.
     *
     * @param whole the response to a request that does not stream, from its outcome
     * @param guide the language the output is guided to (a JSON Schema's, a regular expression's...), or null for free text
     * @param gate where a reasoning model's output starts to be guided, or null for its first token
     */
    record Job(OpenAiJson.Head head, int[] promptIds, SamplingParams sampling, String cacheSalt, boolean stream,
               StreamBridge.Chunks chunks, Function<StreamBridge.Outcome, byte[]> whole, OutputGrammar guide,
               ReasoningGate gate) {
        Job(OpenAiJson.Head head, int[] promptIds, SamplingParams sampling, String cacheSalt, boolean stream,
            StreamBridge.Chunks chunks, Function<StreamBridge.Outcome, byte[]> whole, OutputGrammar guide) {
            this(head, promptIds, sampling, cacheSalt, stream, chunks, whole, guide, null);
        }
    }

    /** Reads the endpoint's fields (the model already checked), tokenizes, and says how to answer. */
    abstract Job prepare(ObjectNode body);

    @Override
    public final void handle(Exchange ex) throws Exception {
        ObjectNode body = OpenAiRequests.parse(ex.body(ctx.policy().maxBodyBytes()));
        OpenAiRequests.checkModel(body, ctx.servedName());
        Job job = prepare(body);
        int vocab = ctx.engine().model().vocabSize();
        for (int id : job.sampling().logitBias().keySet()) {
            if (id >= vocab) {
                // vLLM's answer too
                throw ApiException.invalid("logit_bias", "logit_bias: token id " + id + " is outside the vocabulary ("
                        + vocab + " tokens)");
            }
        }
        GenerationRequest request;
        try {
            request = new GenerationRequest(job.head().id(), job.promptIds(), job.sampling(),
                    ctx.policy().salt(job.cacheSalt()), job.guide(), job.gate());
        } catch (IllegalArgumentException e) {
            throw ApiException.fromEngine(e);
        }
        StreamBridge bridge = new StreamBridge();
        // the client's connection failing (as far as Jetty sees it) cancels; registered first, so
        // that no failure goes unseen between the submit and the wait
        ex.onFailure(bridge::clientGone);
        // a write to a client that left fails, but an answer written only at the end would see it
        // after the whole generation, and a stream writes nothing while it waits in the queue or is
        // prefilled: the connection is watched until the last write
        ex.watchClose(bridge::clientGone);
        GenerationHandle handle;
        try {
            handle = ctx.engine().submit(request, ctx.listenerTap().apply(bridge));
        } catch (QueueFullException e) {
            String m = StreamBridge.message(e);
            // the engine's words say when to retry; Retry-After says it to the SDKs
            throw new ApiException(429, ApiException.RATE_LIMIT, Character.toUpperCase(m.charAt(0)) + m.substring(1)
                    + (m.endsWith(".") ? "" : "."), null, ApiException.RATE_LIMIT);
        } catch (IllegalArgumentException e) {
            throw ApiException.fromEngine(e);
        } catch (IllegalStateException e) {
            throw new ApiException(503, ApiException.SERVER_ERROR, "The server is shutting down: "
                    + StreamBridge.message(e), null, null);
        }
        if (job.stream()) {
            bridge.stream(handle, ex, job.chunks(), t -> ctx.logError("generation " + job.head().id() + " failed", t));
            return;
        }
        StreamBridge.Outcome o = bridge.collect(handle);
        if (bridge.gone() != null) {
            ex.fail(bridge.gone());
            return;
        }
        if (o.error() != null) {
            ctx.logError("generation " + job.head().id() + " failed", o.error());
            throw new ApiException(500, ApiException.SERVER_ERROR, "The generation failed: "
                    + StreamBridge.message(o.error()), null, null);
        }
        ex.sendJson(200, job.whole().apply(o));
    }

    /**
     * 400 {@code context_length_exceeded} when the prompt and the completion's budget do not fit
     * the context, in OpenAI's words ("This model's maximum context length is ..."), which
     * clients match to trim a conversation and retry; {@code param} names the field the client
     * sent, {@code messages} for a chat. The engine refuses the same, naming no API field.
     *
     * @param maxTokens the completion's budget, null when the client gave none (a chat then
     *        fills what the context leaves)
     * @param maxField the field the budget came in ({@code max_tokens}, {@code max_completion_tokens})
     */
    static void checkContext(int promptTokens, Integer maxTokens, String maxField, int context, boolean chat) {
        String what = chat ? "messages" : "prompt";
        if (maxTokens == null) {
            if (promptTokens < context) {
                return;
            }
            throw new ApiException(400, ApiException.INVALID_REQUEST, "This model's maximum context length is "
                    + context + " tokens. However, your " + what + " resulted in " + promptTokens
                    + " tokens, leaving none for the completion. Please reduce the length of the " + what + ".",
                    what, CONTEXT_LENGTH_EXCEEDED);
        }
        long total = (long) promptTokens + maxTokens;
        if (total <= context) {
            return;
        }
        throw new ApiException(400, ApiException.INVALID_REQUEST, "This model's maximum context length is " + context
                + " tokens. However, you requested " + total + " tokens (" + promptTokens + " in the " + what + ", "
                + maxTokens + " in the completion). Please reduce the length of the " + what + " or " + maxField
                + ".", what, CONTEXT_LENGTH_EXCEEDED);
    }

    /** OpenAI's code for a request past the model's context. */
    static final String CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded";

    /** An id such as {@code cmpl-5f0c...}: the prefix and 24 random hex digits. */
    static String newId(String prefix) {
        byte[] b = new byte[12];
        ThreadLocalRandom.current().nextBytes(b);
        return prefix + HexFormat.of().formatHex(b);
    }

    static long now() {
        return System.currentTimeMillis() / 1000;
    }
}
