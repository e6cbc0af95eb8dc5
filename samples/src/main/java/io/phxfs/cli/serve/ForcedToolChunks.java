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
 * stream as the model writes them, token by token. A required choice's list is whole only at
 * its end: its calls are sent then, each as OpenAI streams a call (the opening chunk, then its
 * arguments), with finish reason "tool_calls".
 */
final class ForcedToolChunks implements StreamBridge.Chunks {
    private final OpenAiJson.Head head;
    private final boolean usage;
    /** The named function, or null for a required choice. */
    private final String named;
    private final StringBuilder required = new StringBuilder();

    ForcedToolChunks(OpenAiJson.Head head, boolean usage, String named) {
        this.head = head;
        this.usage = usage;
        this.named = named;
    }

    @Override
    public byte[] first() {
        return OpenAiJson.chatChunk(head, "assistant", "", (String) null, usage);
    }

    @Override
    public List<byte[]> text(String piece) {
        if (named == null) {
            required.append(piece);
            return List.of();
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
        List<ToolCall> calls = ForcedTools.requiredCalls(required.toString());
        if (calls.isEmpty()) {
            // cut short before the list closed: what there is, as content
            out.add(OpenAiJson.chatChunk(head, null, required.toString(), (String) null, usage));
            out.add(OpenAiJson.chatChunk(head, null, null, reason.wire(), usage));
            return out;
        }
        for (int i = 0; i < calls.size(); i++) {
            out.add(OpenAiJson.toolCallChunk(head, i, calls.get(i), usage));
            for (String f : ToolCallChunks.fragments(calls.get(i).arguments())) {
                out.add(OpenAiJson.toolArgumentsChunk(head, i, f, usage));
            }
        }
        out.add(OpenAiJson.chatChunk(head, null, null, "tool_calls", usage));
        return out;
    }

    @Override
    public byte[] usage(Usage u) {
        return usage ? OpenAiJson.usageChunk(head, ChatCompletionsEndpoint.OBJECT, u) : null;
    }
}
