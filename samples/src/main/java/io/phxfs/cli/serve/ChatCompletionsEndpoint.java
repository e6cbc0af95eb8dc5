package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.SamplingParams;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.ReasoningGate;
import io.phxfs.serving.text.ChatTemplate;
import io.phxfs.serving.text.ChatTemplateException;
import io.phxfs.serving.reasoning.ReasoningOutput;
import io.phxfs.serving.reasoning.ReasoningParser;
import io.phxfs.serving.tools.ParsedOutput;
import io.phxfs.serving.tools.ToolCallParser;
import io.phxfs.serving.tools.ToolParsers;
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
 *
 * <p>Tools, as vLLM serves them: the request's {@code tools} are the template's {@code tools}
 * whatever the {@code tool_choice}; with {@code tool_choice: "auto"} (the default when there
 * are tools) the output is parsed for calls by the server's {@code --tool-call-parser}, and a
 * server started without {@code --enable-auto-tool-choice} refuses it with vLLM's 400.
 *
 * <p>Reasoning, as vLLM serves it: with {@code --reasoning-parser} the output's
 * {@code <think>...</think>} block is split off into {@code message.reasoning_content} (and
 * {@code message.reasoning}), streamed as {@code delta.reasoning_content} pieces before the
 * content's, and tool calls are parsed from the content only.
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
        return ctx.engine().tokenizer().encode(promptText(ctx, c, addGenerationPrompt), false);
    }

    /** The chat rendered by the model's template. */
    static String promptText(ServeContext ctx, OpenAiRequests.Chat c, boolean addGenerationPrompt) {
        ChatTemplate template = ctx.engine().chatTemplate().orElseThrow(() -> ApiException.invalid("messages",
                "The model `" + ctx.servedName() + "` has no chat template (neither chat_template.jinja nor a"
                        + " chat_template in tokenizer_config.json); use /v1/completions with a prompt instead."));
        String text;
        try {
            text = template.render(developerAsSystem(c.messages(), template), addGenerationPrompt,
                    templateVariables(c));
        } catch (ChatTemplateException e) {
            throw ApiException.invalid("messages", StreamBridge.message(e));
        }
        return text;
    }

    /** The template's variables besides messages: {@code tools} when given, then chat_template_kwargs over them, as vLLM. */
    static Map<String, Object> templateVariables(OpenAiRequests.Chat c) {
        Map<String, Object> variables = new LinkedHashMap<>();
        if (c.tools().tools() != null) {
            variables.put("tools", c.tools().tools());
        }
        variables.putAll(c.templateKwargs());
        return variables;
    }

    /**
     * The parser for this request's output, or null when it is not parsed for calls.
     *
     * @throws ApiException vLLM's 400 for tool_choice "auto" on a server without auto tool choice
     */
    private ToolCallParser toolParser(ObjectNode body, ToolRequests.Tools tools) {
        if (!tools.parse()) {
            return null;
        }
        ToolCallParser parser = ctx.toolParser();
        if (parser == null) {
            // vLLM's words, then what to do about them
            throw ApiException.invalid("tool_choice", "\"auto\" tool choice requires --enable-auto-tool-choice and"
                    + " --tool-call-parser to be set: start phoenix serve with --enable-auto-tool-choice"
                    + " --tool-call-parser NAME (" + String.join(", ", ToolParsers.names()) + "), or send"
                    + " tool_choice \"none\"" + (body.hasNonNull("tool_choice") ? ""
                    : " (tool_choice is \"auto\" when a request has tools and no tool_choice)"));
        }
        return parser;
    }

    @Override
    Job prepare(ObjectNode body) {
        OpenAiRequests.Chat c = OpenAiRequests.chat(body);
        ToolCallParser parser = toolParser(body, c.tools());
        String prompt = promptText(ctx, c, true);
        int[] ids = ctx.engine().tokenizer().encode(prompt, false);
        int context = ctx.engine().model().contextLength();
        checkContext(ids.length, c.sampling().maxTokens(), c.sampling().maxTokensField(), context, true);
        int room = context - ids.length;
        OpenAiJson.Head head = new OpenAiJson.Head(newId("chatcmpl-"), now(), ctx.servedName());
        boolean usage = c.includeUsage();
        SamplingParams sampling = c.sampling().params(room);
        ReasoningParser reasoner = ctx.reasoningParser();
        // Qwen3's template writes an empty block into the prompt for enable_thinking false
        boolean thinking = !Boolean.FALSE.equals(c.templateKwargs().get("enable_thinking"));
        // a thinking model's template opens the block itself: its output starts inside it
        boolean opened = ReasoningParser.promptOpens(prompt);
        ToolRequests.Tools tools = c.tools();
        JsonSchemaMatcher forced = ForcedTools.matcher(tools);
        // a reasoning model thinks first: its output is guided from the end of its reasoning block,
        // and the guided value is the content (vLLM's structured outputs with a reasoning parser)
        ReasoningGate gate = (forced != null || c.format() != null) && reasoner != null
                ? reasoner.open(thinking, opened).guideGate() : null;
        if (forced != null) {
            // the content is the call(s) itself: no tool parser
            StreamBridge.Chunks calls = new ForcedToolChunks(head, usage, tools.named());
            if (reasoner != null) {
                calls = new ReasoningChunks(head, usage, reasoner.open(thinking, opened), calls);
            }
            ReasoningParser r = reasoner;
            return new Job(head, ids, sampling, c.cacheSalt(), c.stream(), calls,
                    o -> forcedWhole(head, o, tools.named(), r == null ? null : r.parse(o.text(), thinking, opened)),
                    forced, gate);
        }
        StreamBridge.Chunks chunks;
        if (parser != null) {
            if (parser.needsSpecialTokens()) {
                // markers that are special tokens must reach the parser (vLLM's adjust_request)
                sampling = sampling.withStopping(sampling.minTokens(), sampling.stopTokenIds(),
                        sampling.includeStopStrInOutput(), false);
            }
            chunks = new ToolCallChunks(head, usage, parser.open(), c.tools().parallel());
        } else {
            chunks = plainChunks(head, usage);
        }
        if (reasoner != null) {
            chunks = new ReasoningChunks(head, usage, reasoner.open(thinking, opened), chunks);
        }
        boolean parallel = c.tools().parallel();
        ReasoningParser r = reasoner;
        return new Job(head, ids, sampling, c.cacheSalt(), c.stream(), chunks,
                o -> whole(head, o, r == null ? null : r.parse(o.text(), thinking, opened), parser, parallel), c.format(),
                gate);
    }

    /**
     * The whole response of a forced tool choice: a named function's output is its arguments
     * (finish reason "stop", as OpenAI's for a named choice; cut short by max_tokens, the call
     * with the arguments so far and "length", as vLLM and the stream give it); a required
     * choice's is the list of calls (finish reason "tool_calls"; cut short, the calls named so far
     * with their arguments so far and "length"; cut before any name, the text as content), read as
     * the stream reads it ({@link RequiredCallsScanner}). With a reasoning parser the calls are read from the content
     * after the reasoning block, which the answer carries as the reasoning.
     */
    private static byte[] forcedWhole(OpenAiJson.Head head, StreamBridge.Outcome o, String named,
                                      ReasoningOutput reasoning) {
        String text = reasoning == null ? o.text() : reasoning.content() == null ? "" : reasoning.content();
        if (named != null) {
            var call = new io.phxfs.serving.tools.ToolCall(io.phxfs.serving.tools.ToolCallIds.OPENAI.get(), named, text.strip());
            return OpenAiJson.chatCompletion(head, reasoning, null, List.of(call), o.reason().wire(), o.usage());
        }
        RequiredCallsScanner scanner = new RequiredCallsScanner();
        scanner.add(text);
        List<io.phxfs.serving.tools.ToolCall> calls = new java.util.ArrayList<>();
        for (RequiredCallsScanner.Call c : scanner.calls()) {
            calls.add(new io.phxfs.serving.tools.ToolCall(io.phxfs.serving.tools.ToolCallIds.OPENAI.get(), c.name(), c.arguments()));
        }
        return calls.isEmpty() ? OpenAiJson.chatCompletion(head, reasoning, text, List.of(), o.reason().wire(), o.usage())
                : OpenAiJson.chatCompletion(head, reasoning, null, calls, scanner.complete() ? "tool_calls" : o.reason().wire(),
                        o.usage());
    }

    /**
     * The whole response: the reasoning split off first when the server has a reasoning parser,
     * then the content (only) parsed for tool calls when the request's are.
     */
    private static byte[] whole(OpenAiJson.Head head, StreamBridge.Outcome o, ReasoningOutput reasoning,
                                ToolCallParser parser, boolean parallel) {
        String content = reasoning == null ? o.text() : reasoning.content();
        if (parser == null) {
            return OpenAiJson.chatCompletion(head, reasoning, content, List.of(), o.reason().wire(), o.usage());
        }
        ParsedOutput parsed = content == null ? new ParsedOutput(null, List.of()) : parser.parse(content);
        var calls = ToolCallChunks.calls(parsed, parallel);
        return OpenAiJson.chatCompletion(head, reasoning, parsed.content(), calls,
                ToolCallChunks.finishReason(!calls.isEmpty(), o.reason()), o.usage());
    }

    /** A streamed chat's chunks when its text is sent as it is: one content chunk per token. */
    private static StreamBridge.Chunks plainChunks(OpenAiJson.Head head, boolean usage) {
        return new StreamBridge.Chunks() {
            @Override
            public byte[] first() {
                return OpenAiJson.chatChunk(head, "assistant", "", (FinishReason) null, usage);
            }

            @Override
            public List<byte[]> text(String piece) {
                return List.of(OpenAiJson.chatChunk(head, null, piece, (FinishReason) null, usage));
            }

            @Override
            public List<byte[]> last(FinishReason reason) {
                return List.of(OpenAiJson.chatChunk(head, null, null, reason, usage));
            }

            @Override
            public byte[] usage(Usage u) {
                return usage ? OpenAiJson.usageChunk(head, OBJECT, u) : null;
            }
        };
    }
}
