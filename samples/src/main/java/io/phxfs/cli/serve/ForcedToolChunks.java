package io.phxfs.cli.serve;

import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.tools.ToolCall;
import io.phxfs.serving.tools.ToolCallIds;
import java.util.ArrayList;
import java.util.List;

/**
 * A streamed chat whose tool choice is forced ({@link ForcedTools}). A named function's call
 * opens with the first chunk (its id, type and name, arguments "") and its arguments then
 * stream as the model writes them, token by token. A required choice's list streams the same
 * way, call by call ({@link RequiredCallsScanner}): a call's opening chunk once its name is
 * written, then its arguments as they come; finish reason "tool_calls" once the list closes.
 */
final class ForcedToolChunks implements StreamBridge.Chunks {
    private final OpenAiJson.Head head;
    private final boolean usage;
    /** The named function, or null for a required choice. */
    private final String named;
    /** The required list's reader, or null for a named function. */
    private final RequiredCallsScanner required;

    ForcedToolChunks(OpenAiJson.Head head, boolean usage, String named) {
        this.head = head;
        this.usage = usage;
        this.named = named;
        this.required = named == null ? new RequiredCallsScanner() : null;
    }

    @Override
    public byte[] first() {
        return OpenAiJson.chatChunk(head, "assistant", "", (String) null, usage);
    }

    @Override
    public List<byte[]> text(String piece) {
        if (named == null) {
            List<byte[]> out = new ArrayList<>();
            for (RequiredCallsScanner.Event e : required.add(piece)) {
                out.add(e.name() != null
                        ? OpenAiJson.toolCallChunk(head, e.index(), new ToolCall(ToolCallIds.OPENAI.get(), e.name(), ""), usage)
                        : OpenAiJson.toolArgumentsChunk(head, e.index(), e.arguments(), usage));
            }
            return out;
        }
        List<byte[]> out = new ArrayList<>(2);
        if (!opened) {
            opened = true;
            out.add(OpenAiJson.toolCallChunk(head, 0, new ToolCall(ToolCallIds.OPENAI.get(), named, ""), usage));
        }
        if (!piece.isEmpty()) {
            out.add(OpenAiJson.toolArgumentsChunk(head, 0, piece, usage));
        }
        return out;
    }

    private boolean opened;

    @Override
    public List<byte[]> last(FinishReason reason) {
        List<byte[]> out = new ArrayList<>();
        if (named != null) {
            out.addAll(text(""));
            out.add(OpenAiJson.chatChunk(head, null, null, reason.wire(), usage));
            return out;
        }
        if (required.calls().isEmpty()) {
            // cut short before a call was named: what there is, as content
            out.add(OpenAiJson.chatChunk(head, null, required.text(), (String) null, usage));
        }
        out.add(OpenAiJson.chatChunk(head, null, null, required.complete() ? "tool_calls" : reason.wire(), usage));
        return out;
    }

    @Override
    public byte[] usage(Usage u) {
        return usage ? OpenAiJson.usageChunk(head, ChatCompletionsEndpoint.OBJECT, u) : null;
    }
}
