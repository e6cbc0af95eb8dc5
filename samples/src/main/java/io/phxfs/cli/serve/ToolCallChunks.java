package io.phxfs.cli.serve;

import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.tools.ParsedOutput;
import io.phxfs.serving.tools.ToolCall;
import io.phxfs.serving.tools.ToolCallDelta;
import io.phxfs.serving.tools.ToolCallStream;
import java.util.ArrayList;
import java.util.List;

/**
 * A streamed chat whose text is parsed for tool calls: the text goes through the parser's
 * {@link ToolCallStream}; content comes out as {@code delta.content} chunks, each call as
 * OpenAI streams one: a chunk with its {@code index}, {@code id}, {@code type} and
 * {@code function.name} (arguments ""), then chunks of {@code function.arguments} fragments,
 * which clients concatenate. The last chunk's finish reason is "tool_calls" when there were
 * calls, as vLLM's. With {@code parallel_tool_calls: false} only the first call is sent.
 */
final class ToolCallChunks implements StreamBridge.Chunks {
    private final OpenAiJson.Head head;
    private final boolean usage;
    private final ToolCallStream stream;
    private final boolean parallel;
    private boolean called;

    ToolCallChunks(OpenAiJson.Head head, boolean usage, ToolCallStream stream, boolean parallel) {
        this.head = head;
        this.usage = usage;
        this.stream = stream;
        this.parallel = parallel;
    }

    @Override
    public byte[] first() {
        return OpenAiJson.chatChunk(head, "assistant", "", (String) null, usage);
    }

    @Override
    public List<byte[]> text(String piece) {
        return chunks(stream.add(piece));
    }

    @Override
    public List<byte[]> last(FinishReason reason) {
        List<byte[]> out = chunks(stream.finish());
        out.add(OpenAiJson.chatChunk(head, null, null, finishReason(called, reason), usage));
        return out;
    }

    @Override
    public byte[] usage(Usage u) {
        return usage ? OpenAiJson.usageChunk(head, ChatCompletionsEndpoint.OBJECT, u) : null;
    }

    private List<byte[]> chunks(List<ToolCallDelta> deltas) {
        List<byte[]> out = new ArrayList<>();
        for (ToolCallDelta d : deltas) {
            switch (d) {
                case ToolCallDelta.Content c -> out.add(OpenAiJson.chatChunk(head, null, c.text(), (String) null, usage));
                case ToolCallDelta.Call c -> {
                    if (!parallel && c.index() > 0) {
                        continue;
                    }
                    called = true;
                    out.add(OpenAiJson.toolCallChunk(head, c.index(), c.call(), usage));
                    for (String f : fragments(c.call().arguments())) {
                        out.add(OpenAiJson.toolArgumentsChunk(head, c.index(), f, usage));
                    }
                }
            }
        }
        return out;
    }

    /** "tool_calls" when the choice called a tool (even if it then ran out of tokens), as vLLM's. */
    static String finishReason(boolean called, FinishReason reason) {
        return called ? "tool_calls" : reason.wire();
    }

    /** The whole response's calls: all, or with parallel_tool_calls false the first. */
    static List<ToolCall> calls(ParsedOutput o, boolean parallel) {
        return parallel || o.calls().size() <= 1 ? o.calls() : o.calls().subList(0, 1);
    }

    /**
     * The arguments cut after each {@code ", "} and {@code ": "}, about where a model's tokens
     * would fall, so that clients meet arguments in several fragments as from OpenAI and vLLM;
     * concatenated they are the arguments exactly.
     */
    static List<String> fragments(String arguments) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i + 1 < arguments.length(); i++) {
            char c = arguments.charAt(i);
            if ((c == ',' || c == ':') && arguments.charAt(i + 1) == ' ') {
                out.add(arguments.substring(start, i + 2));
                start = i + 2;
            }
        }
        if (start < arguments.length()) {
            out.add(arguments.substring(start));
        }
        return out;
    }
}
