package io.phxfs.cli.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.reasoning.ReasoningOutput;
import io.phxfs.serving.tools.ToolCall;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The JSON this server answers, in OpenAI's exact shapes: completions and chat completions,
 * whole and as stream chunks, the usage, the model list and errors. Everything as UTF-8 bytes
 * ready to write.
 */
final class OpenAiJson {
    private OpenAiJson() {
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** What {@code owned_by} says of the served model. */
    static final String OWNER = "phoenix";

    /** The fields every response and every chunk of one request repeats. */
    record Head(String id, long created, String model) {
    }

    static byte[] bytes(ObjectNode n) {
        try {
            return JSON.writeValueAsBytes(n);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ObjectNode head(Head h, String object) {
        ObjectNode n = F.objectNode();
        n.put("id", h.id());
        n.put("object", object);
        n.put("created", h.created());
        n.put("model", h.model());
        return n;
    }

    static ObjectNode usage(Usage u) {
        ObjectNode n = F.objectNode();
        n.put("prompt_tokens", u.promptTokens());
        n.put("completion_tokens", u.completionTokens());
        n.put("total_tokens", u.totalTokens());
        n.putObject("prompt_tokens_details").put("cached_tokens", u.cachedTokens());
        return n;
    }

    /** A whole {@code text_completion}. */
    static byte[] completion(Head h, String text, FinishReason reason, Usage u) {
        ObjectNode n = head(h, "text_completion");
        ObjectNode c = n.putArray("choices").addObject();
        c.put("index", 0);
        c.put("text", text);
        c.putNull("logprobs");
        c.put("finish_reason", reason.wire());
        n.set("usage", usage(u));
        return bytes(n);
    }

    /** A whole {@code chat.completion}. */
    static byte[] chatCompletion(Head h, String content, FinishReason reason, Usage u) {
        return chatCompletion(h, content, List.of(), reason.wire(), u);
    }

    /**
     * A whole {@code chat.completion} with the tool calls found in its text.
     *
     * @param content the text outside the calls, or null for none
     * @param calls the calls, empty for none (then {@code message.tool_calls} is left out)
     * @param reason the finish reason's wire value ("tool_calls" when there are calls)
     */
    static byte[] chatCompletion(Head h, String content, List<ToolCall> calls, String reason, Usage u) {
        return chatCompletion(h, null, content, calls, reason, u);
    }

    /**
     * A whole {@code chat.completion} whose reasoning was split from its content
     * ({@code --reasoning-parser}): {@code message.reasoning_content} and {@code message.reasoning}
     * (vLLM's field and its newer name, which vLLM sends both) carry it, null when the output
     * had none.
     *
     * @param reasoning the split, or null when the server has no reasoning parser (then
     *        neither field is sent)
     * @param content the text outside the reasoning and the calls, or null for none
     * @param calls the calls, empty for none (then {@code message.tool_calls} is left out)
     * @param reason the finish reason's wire value ("tool_calls" when there are calls)
     */
    static byte[] chatCompletion(Head h, ReasoningOutput reasoning, String content, List<ToolCall> calls, String reason,
                                 Usage u) {
        ObjectNode n = head(h, "chat.completion");
        ObjectNode c = n.putArray("choices").addObject();
        c.put("index", 0);
        ObjectNode m = c.putObject("message");
        m.put("role", "assistant");
        m.put("content", content);
        if (reasoning != null) {
            m.put("reasoning", reasoning.reasoning());
            m.put("reasoning_content", reasoning.reasoning());
        }
        if (!calls.isEmpty()) {
            ArrayNode a = m.putArray("tool_calls");
            calls.forEach(call -> a.add(toolCall(call)));
        }
        c.putNull("logprobs");
        c.put("finish_reason", reason);
        n.set("usage", usage(u));
        return bytes(n);
    }

    /** <code>{"id", "type": "function", "function": {"name", "arguments"}}</code>. */
    private static ObjectNode toolCall(ToolCall call) {
        ObjectNode t = F.objectNode();
        t.put("id", call.id());
        t.put("type", "function");
        ObjectNode f = t.putObject("function");
        f.put("name", call.name());
        f.put("arguments", call.arguments());
        return t;
    }

    /**
     * The chunk that opens a streamed tool call, as OpenAI streams it: index, id, type and
     * name, with empty arguments that {@link #toolArgumentsChunk} chunks then extend.
     */
    static byte[] toolCallChunk(Head h, int index, ToolCall call, boolean usageNull) {
        ObjectNode t = F.objectNode();
        t.put("index", index);
        t.put("id", call.id());
        t.put("type", "function");
        ObjectNode f = t.putObject("function");
        f.put("name", call.name());
        f.put("arguments", "");
        return toolChunk(h, t, usageNull);
    }

    /** A piece of a streamed call's arguments: index and {@code function.arguments} only. */
    static byte[] toolArgumentsChunk(Head h, int index, String fragment, boolean usageNull) {
        ObjectNode t = F.objectNode();
        t.put("index", index);
        t.putObject("function").put("arguments", fragment);
        return toolChunk(h, t, usageNull);
    }

    private static byte[] toolChunk(Head h, ObjectNode toolCall, boolean usageNull) {
        ObjectNode n = head(h, "chat.completion.chunk");
        ObjectNode c = n.putArray("choices").addObject();
        c.put("index", 0);
        c.putObject("delta").putArray("tool_calls").add(toolCall);
        c.putNull("logprobs");
        c.putNull("finish_reason");
        if (usageNull) {
            n.putNull("usage");
        }
        return bytes(n);
    }

    /**
     * A {@code chat.completion.chunk} of reasoning: {@code delta.reasoning_content} and
     * {@code delta.reasoning} (vLLM sends both), no content.
     */
    static byte[] reasoningChunk(Head h, String reasoning, boolean usageNull) {
        ObjectNode n = head(h, "chat.completion.chunk");
        ObjectNode c = n.putArray("choices").addObject();
        c.put("index", 0);
        ObjectNode d = c.putObject("delta");
        d.put("reasoning", reasoning);
        d.put("reasoning_content", reasoning);
        c.putNull("logprobs");
        c.putNull("finish_reason");
        if (usageNull) {
            n.putNull("usage");
        }
        return bytes(n);
    }

    /**
     * A {@code text_completion} chunk.
     *
     * @param reason null but in the last chunk
     * @param usageNull whether to carry {@code "usage": null} (with include_usage, as OpenAI does)
     */
    static byte[] completionChunk(Head h, String text, FinishReason reason, boolean usageNull) {
        ObjectNode n = head(h, "text_completion");
        ObjectNode c = n.putArray("choices").addObject();
        c.put("index", 0);
        c.put("text", text);
        c.putNull("logprobs");
        finish(c, reason);
        if (usageNull) {
            n.putNull("usage");
        }
        return bytes(n);
    }

    /**
     * A {@code chat.completion.chunk}.
     *
     * @param role "assistant" in the first chunk, else null
     * @param content the new text, or null for none (the last chunk's delta is empty)
     * @param reason null but in the last chunk
     */
    static byte[] chatChunk(Head h, String role, String content, FinishReason reason, boolean usageNull) {
        return chatChunk(h, role, content, reason == null ? null : reason.wire(), usageNull);
    }

    /** {@link #chatChunk(Head, String, String, FinishReason, boolean)} with the finish reason's wire value. */
    static byte[] chatChunk(Head h, String role, String content, String reason, boolean usageNull) {
        ObjectNode n = head(h, "chat.completion.chunk");
        ObjectNode c = n.putArray("choices").addObject();
        c.put("index", 0);
        ObjectNode d = c.putObject("delta");
        if (role != null) {
            d.put("role", role);
        }
        if (content != null) {
            d.put("content", content);
        }
        c.putNull("logprobs");
        if (reason == null) {
            c.putNull("finish_reason");
        } else {
            c.put("finish_reason", reason);
        }
        if (usageNull) {
            n.putNull("usage");
        }
        return bytes(n);
    }

    private static void finish(ObjectNode choice, FinishReason reason) {
        if (reason == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", reason.wire());
        }
    }

    /** The chunk {@code stream_options.include_usage} asks for: no choices, the usage. */
    static byte[] usageChunk(Head h, String object, Usage u) {
        ObjectNode n = head(h, object);
        n.putArray("choices");
        n.set("usage", usage(u));
        return bytes(n);
    }

    /**
     * OpenAI's model object with vLLM's additions, which clients read for the context length
     * ({@code max_model_len}): {@code root} (the served name), {@code parent} (null) and one
     * {@code permission}.
     */
    private static ObjectNode model(String name, long created, int maxModelLen) {
        ObjectNode m = F.objectNode();
        m.put("id", name);
        m.put("object", "model");
        m.put("created", created);
        m.put("owned_by", OWNER);
        m.put("root", name);
        m.putNull("parent");
        m.put("max_model_len", maxModelLen);
        ObjectNode p = m.putArray("permission").addObject();
        p.put("id", "modelperm-" + Integer.toHexString(name.hashCode()));
        p.put("object", "model_permission");
        p.put("created", created);
        p.put("allow_create_engine", false);
        p.put("allow_sampling", true);
        p.put("allow_logprobs", false);
        p.put("allow_search_indices", false);
        p.put("allow_view", true);
        p.put("allow_fine_tuning", false);
        p.put("organization", "*");
        p.putNull("group");
        p.put("is_blocking", false);
        return m;
    }

    /** {@code GET /v1/models}. */
    static byte[] models(String name, long created, int maxModelLen) {
        ObjectNode n = F.objectNode();
        n.put("object", "list");
        ArrayNode data = n.putArray("data");
        data.add(model(name, created, maxModelLen));
        return bytes(n);
    }

    /** {@code GET /v1/models/NAME}. */
    static byte[] modelCard(String name, long created, int maxModelLen) {
        return bytes(model(name, created, maxModelLen));
    }

    /** {@code {"error": {"message", "type", "param", "code"}}}. */
    static ObjectNode errorNode(String message, String type, String param, String code) {
        ObjectNode n = F.objectNode();
        ObjectNode e = n.putObject("error");
        e.put("message", message);
        e.put("type", type);
        e.put("param", param);
        e.put("code", code);
        return n;
    }

    static byte[] error(ApiException e) {
        return bytes(errorNode(e.getMessage(), e.type(), e.param(), e.code()));
    }

    /** {@code GET /health}. */
    static byte[] health(String status) {
        ObjectNode n = F.objectNode();
        n.put("status", status);
        return bytes(n);
    }

    /** One server-sent event carrying a JSON payload: {@code data: {json}\n\n}. */
    static byte[] event(byte[] json) {
        byte[] out = new byte[DATA.length + json.length + 2];
        System.arraycopy(DATA, 0, out, 0, DATA.length);
        System.arraycopy(json, 0, out, DATA.length, json.length);
        out[out.length - 2] = '\n';
        out[out.length - 1] = '\n';
        return out;
    }

    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);

    /** The event that ends a stream. */
    static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
}
