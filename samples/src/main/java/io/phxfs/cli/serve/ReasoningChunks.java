package io.phxfs.cli.serve;

import io.phxfs.serving.engine.FinishReason;
import io.phxfs.serving.engine.Usage;
import io.phxfs.serving.reasoning.ReasoningDelta;
import io.phxfs.serving.reasoning.ReasoningStream;
import java.util.ArrayList;
import java.util.List;

/**
 * A streamed chat whose reasoning is split from its content ({@code --reasoning-parser}): the
 * text goes through the parser's {@link ReasoningStream}; reasoning comes out as
 * {@code delta.reasoning_content} chunks, and the content goes on to the chunks it would have
 * made without a reasoning parser (plain text, or {@link ToolCallChunks} when tool calls are
 * parsed, which so see the content only, as vLLM's). A token whose text is held back (it may
 * be the start of a tag) makes no chunk, as vLLM sends none for it.
 */
final class ReasoningChunks implements StreamBridge.Chunks {
    private final OpenAiJson.Head head;
    private final boolean usage;
    private final ReasoningStream stream;
    private final StreamBridge.Chunks content;

    ReasoningChunks(OpenAiJson.Head head, boolean usage, ReasoningStream stream, StreamBridge.Chunks content) {
        this.head = head;
        this.usage = usage;
        this.stream = stream;
        this.content = content;
    }

    @Override
    public byte[] first() {
        return content.first();
    }

    @Override
    public List<byte[]> text(String piece) {
        return chunks(stream.add(piece));
    }

    @Override
    public List<byte[]> last(FinishReason reason) {
        List<byte[]> out = chunks(stream.finish());
        out.addAll(content.last(reason));
        return out;
    }

    @Override
    public byte[] usage(Usage u) {
        return content.usage(u);
    }

    private List<byte[]> chunks(ReasoningDelta d) {
        List<byte[]> out = new ArrayList<>();
        if (!d.reasoning().isEmpty()) {
            out.add(OpenAiJson.reasoningChunk(head, d.reasoning(), usage));
        }
        if (!d.content().isEmpty()) {
            out.addAll(content.text(d.content()));
        }
        return out;
    }
}
