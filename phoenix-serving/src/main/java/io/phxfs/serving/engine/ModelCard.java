package io.phxfs.serving.engine;

import java.nio.file.Path;

/**
 * What is served.
 *
 * @param dir the checkpoint directory
 * @param modelType config.json's model_type
 * @param contextLength the most positions a sequence may have, prompt and completion together
 * @param vocabSize the logits' width
 * @param identity a digest of the checkpoint's safetensors headers, config.json and tokenizer:
 *        part of every prefix-cache key, so that a changed checkpoint never reuses KV
 * @param created when the engine started, in Unix seconds
 */
public record ModelCard(Path dir, String modelType, int contextLength, int vocabSize, String identity, long created) {
}
