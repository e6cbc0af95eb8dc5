/**
 * Serving on top of the DJL blocks: a generation engine with continuous batching and sampling
 * ({@code io.phxfs.serving.engine}), text in and out through a checkpoint's own tokenizer and
 * chat template ({@code io.phxfs.serving.text}), prefix KV reuse across requests through
 * kvcache-tier, and a byte-level JSON Schema matcher for guided (structured-output) decoding
 * ({@code io.phxfs.serving.guided}). The HTTP layer (OpenAI's API) is the CLI's {@code phoenix serve}.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // DJL's tokenizers and jinjava are automatic modules
module io.phxfs.serving {
    requires transitive io.phxfs.djl;
    requires transitive io.phxfs.kvcache;
    requires ai.djl.tokenizers;
    requires jinjava;
    requires com.fasterxml.jackson.databind;
    requires org.apache.lucene.core;

    exports io.phxfs.serving.engine;
    exports io.phxfs.serving.text;
    exports io.phxfs.serving.tools;
    exports io.phxfs.serving.reasoning;
    exports io.phxfs.serving.guided;
}
