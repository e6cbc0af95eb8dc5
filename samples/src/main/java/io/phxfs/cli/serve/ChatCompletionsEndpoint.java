package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.text.ChatTemplate;
import io.phxfs.serving.text.ChatTemplateException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code POST /v1/chat/completions}: the messages rendered by the model's chat template with the
 * generation prompt, tokenized without adding special tokens (the template writes them), as
 * transformers' {@code apply_chat_template} does; a template's {@code raise_exception} is a 400
 * with its message. Without {@code max_tokens} (or {@code max_completion_tokens}) the
 * completion may fill the context, as vLLM's.
 */
final class ChatCompletionsEndpoint extends GenerationEndpoint {
    static final String OBJECT = "chat.completion.chunk";

    ChatCompletionsEndpoint(ServeContext ctx) {
        super(ctx);
    }

    /**
     * OpenAI's {@code developer} role (its newer name for {@code system}, which the SDKs and many
     * apps send) as {@code system}, unless the template names {@code developer} itself (gpt-oss'
     * does): most templates know only system, user, assistant and tool, and either refuse
     * another role or drop its message without a word. vLLM's renderer maps it likewise.
     */
    static List<Map<String, Object>> developerAsSystem(List<Map<String, Object>> messages, ChatTemplate template) {
        if (template.namesRole(DEVELOPER) || messages.stream().noneMatch(m -> DEVELOPER.equals(m.get("role")))) {
            return messages;
        }
        List<Map<String, Object>> out = new ArrayList<>(messages.size());
        for (Map<String, Object> m : messages) {
            if (DEVELOPER.equals(m.get("role"))) {
                Map<String, Object> system = new LinkedHashMap<>(m);
                system.put("role", "system");
                m = system;
            }
            out.add(m);
        }
        return out;
    }

    private static final String DEVELOPER = "developer";

    /**
     * The conversation's prompt tokens: the messages rendered by the chat template, tokenized
     * without adding special tokens (the template writes them).
     *
     * @throws ApiException 400 when the model has no template or the template refuses the messages
     */
    static int[] promptIds(ServeContext ctx, OpenAiRequests.Chat c, boolean addGenerationPrompt) {
        ChatTemplate template = ctx.engine().chatTemplate().orElseThrow(() -> ApiException.invalid("messages",
                "The model `" + ctx.servedName() + "` has no chat template (neither chat_template.jinja nor a"
                        + " chat_template in tokenizer_config.json); use /v1/completions with a prompt instead."));
        String text;
        try {
            text = template.render(developerAsSystem(c.messages(), template), addGenerationPrompt, c.templateKwargs());
        } catch (ChatTemplateException e) {
            throw ApiException.invalid("messages", StreamBridge.message(e));
        }
        return ctx.engine().tokenizer().encode(text, false);
    }

    @Override
    Job prepare(ObjectNode body) {
        OpenAiRequests.Chat c = OpenAiRequests.chat(body);
        int[] ids = promptIds(ctx, c, true);
        int context = ctx.engine().model().contextLength();
        checkContext(ids.length, c.sampling().maxTokens(), c.sampling().maxTokensField(), context, true);
        int room = context - ids.length;
        OpenAiJson.Head head = new OpenAiJson.Head(newId("chatcmpl-"), now(), ctx.servedName());
        boolean usage = c.includeUsage();
        StreamBridge.Chunks chunks = new StreamBridge.Chunks() {
            @Override
            public byte[] first() {
                return OpenAiJson.chatChunk(head, "assistant", "", null, usage);
            }

            @Override
            public byte[] text(String piece) {
                return OpenAiJson.chatChunk(head, null, piece, null, usage);
            }

            @Override
            public byte[] last(FinishReason reason) {
                return OpenAiJson.chatChunk(head, null, null, reason, usage);
            }

            @Override
            public byte[] usage(Usage u) {
                return usage ? OpenAiJson.usageChunk(head, OBJECT, u) : null;
            }
        };
        return new Job(head, ids, c.sampling().params(room), c.cacheSalt(), c.stream(), chunks,
                o -> OpenAiJson.chatCompletion(head, o.text(), o.reason(), o.usage()));
    }
}
