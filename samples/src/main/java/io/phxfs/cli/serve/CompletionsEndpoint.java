package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.Usage;
import java.util.List;

/**
 * {@code POST /v1/completions}: a prompt as text (tokenized with the model's special tokens, a
 * BOS where the tokenizer adds one, as vLLM does) or as token ids; {@code max_tokens} 16 unless
 * given.
 */
final class CompletionsEndpoint extends GenerationEndpoint {
    static final String OBJECT = "text_completion";

    CompletionsEndpoint(ServeContext ctx) {
        super(ctx);
    }

    @Override
    Job prepare(ObjectNode body) {
        OpenAiRequests.Completion c = OpenAiRequests.completion(body);
        int[] ids = c.ids() != null ? c.ids() : ctx.engine().tokenizer().encode(c.text(), true);
        Integer max = c.sampling().maxTokens();
        checkContext(ids.length, max != null ? max : OpenAiRequests.DEFAULT_COMPLETION_TOKENS, "max_tokens",
                ctx.engine().model().contextLength(), false);
        OpenAiJson.Head head = new OpenAiJson.Head(newId("cmpl-"), now(), ctx.servedName());
        boolean usage = c.includeUsage();
        StreamBridge.Chunks chunks = new StreamBridge.Chunks() {
            @Override
            public byte[] first() {
                return null;
            }

            @Override
            public List<byte[]> text(String piece) {
                return List.of(OpenAiJson.completionChunk(head, piece, null, usage));
            }

            @Override
            public List<byte[]> last(FinishReason reason) {
                return List.of(OpenAiJson.completionChunk(head, "", reason, usage));
            }

            @Override
            public byte[] usage(Usage u) {
                return usage ? OpenAiJson.usageChunk(head, OBJECT, u) : null;
            }
        };
        return new Job(head, ids, c.sampling().params(OpenAiRequests.DEFAULT_COMPLETION_TOKENS), c.cacheSalt(),
                c.stream(), chunks, o -> OpenAiJson.completion(head, o.text(), o.reason(), o.usage()), c.format());
    }
}
