package io.phxfs.kvcache;

import java.util.Locale;
import java.util.Map;

/**
 * The shape of a model's KV cache and of one stored chunk of it.
 *
 * <p>A chunk is stored in LMCache's {@link Kind#KV_2LTD} order, {@code [2, layers, tokens,
 * kvHeads * headDim]} (keys then values), or for {@link Kind#MLA} models, which keep one latent
 * tensor per layer, {@code [1, layers, tokens, kvHeads * headDim]}. {@link KvTensors} gathers it
 * from, and scatters it back into, the per-layer {@code [batch, kvHeads, tokens, headDim]}
 * tensors an inference engine holds.
 *
 * @param layers   transformer layers, {@code > 0}
 * @param kvHeads  key/value heads per layer, {@code > 0}
 * @param headDim  elements per head, {@code > 0}
 * @param dtype    element type
 * @param kind     keys and values, or MLA's single tensor
 */
public record KvLayout(int layers, int kvHeads, int headDim, DType dtype, Kind kind) {
    /** How a chunk holds a layer's cache. */
    public enum Kind {
        /** Keys and values: {@code [2, layers, tokens, kvHeads * headDim]}. */
        KV_2LTD(2),
        /** Multi-head latent attention: one tensor per layer, {@code [1, layers, tokens, kvHeads * headDim]}. */
        MLA(1);

        private final int tensors;

        Kind(int tensors) {
            this.tensors = tensors;
        }

        /**
         * Tensors per layer.
         *
         * @return 2 for keys and values, 1 for MLA
         */
        public int tensorsPerLayer() {
            return tensors;
        }
    }

    /** Element types of a KV cache, with LMCache's names. */
    public enum DType {
        /** bfloat16. */
        BFLOAT16(2, "bfloat16"),
        /** IEEE half. */
        FLOAT16(2, "half"),
        /** IEEE single. */
        FLOAT32(4, "float"),
        /** 8-bit float e4m3. */
        FLOAT8_E4M3(1, "fp8_e4m3"),
        /** 8-bit float e5m2. */
        FLOAT8_E5M2(1, "fp8_e5m2");

        private final int bytes;
        private final String lmcacheName;

        DType(int bytes, String lmcacheName) {
            this.bytes = bytes;
            this.lmcacheName = lmcacheName;
        }

        /**
         * Bytes per element.
         *
         * @return the element size
         */
        public int bytes() {
            return bytes;
        }

        /**
         * The name LMCache puts into a key string ({@code bfloat16}, {@code half}, ...).
         *
         * @return the name in keys
         */
        public String keyName() {
            return lmcacheName;
        }

        /**
         * Reads a dtype by its LMCache name, its enum name or torch's spelling
         * ({@code torch.bfloat16}, {@code bf16}, {@code fp16}, {@code float16}, {@code fp32}).
         *
         * @param name the name
         * @return the dtype
         * @throws IllegalArgumentException naming the accepted names
         */
        public static DType parse(String name) {
            String n = name.toLowerCase(Locale.ROOT).replace("torch.", "");
            return switch (n) {
                case "bfloat16", "bf16" -> BFLOAT16;
                case "half", "float16", "fp16", "f16" -> FLOAT16;
                case "float", "float32", "fp32", "f32" -> FLOAT32;
                case "fp8_e4m3", "float8_e4m3fn", "f8_e4m3" -> FLOAT8_E4M3;
                case "fp8_e5m2", "float8_e5m2", "f8_e5m2" -> FLOAT8_E5M2;
                default -> throw new IllegalArgumentException("unknown dtype '" + name
                        + "': use bfloat16, half, float, fp8_e4m3 or fp8_e5m2");
            };
        }
    }

    private static final Map<String, KvLayout> PRESETS = Map.of(
            "llama-3.1-8b", new KvLayout(32, 8, 128, DType.BFLOAT16, Kind.KV_2LTD),
            "llama-3.1-70b", new KvLayout(80, 8, 128, DType.BFLOAT16, Kind.KV_2LTD),
            "qwen2.5-7b", new KvLayout(28, 4, 128, DType.BFLOAT16, Kind.KV_2LTD),
            "deepseek-v3", new KvLayout(61, 1, 576, DType.BFLOAT16, Kind.MLA),
            "tiny-llama", new KvLayout(2, 2, 16, DType.BFLOAT16, Kind.KV_2LTD));

    /**
     * Checks the fields.
     *
     * @throws IllegalArgumentException when a count is not positive or a field is null
     */
    public KvLayout {
        if (layers <= 0 || kvHeads <= 0 || headDim <= 0) {
            throw new IllegalArgumentException("KvLayout: layers, kvHeads and headDim must be > 0, were "
                    + layers + ", " + kvHeads + ", " + headDim);
        }
        if (dtype == null || kind == null) {
            throw new IllegalArgumentException("KvLayout: dtype and kind are required");
        }
    }

    /**
     * A named layout: {@code llama-3.1-8b} (32 layers, 8 KV heads, head dim 128, bf16: 32 MiB per
     * 256-token chunk), {@code llama-3.1-70b}, {@code qwen2.5-7b}, {@code deepseek-v3} (MLA) or
     * {@code tiny-llama} (the test fixture's model).
     *
     * @param name the preset's name
     * @return the layout
     * @throws IllegalArgumentException naming the presets for an unknown name
     */
    public static KvLayout preset(String name) {
        KvLayout l = PRESETS.get(name.toLowerCase(Locale.ROOT));
        if (l == null) {
            throw new IllegalArgumentException("unknown layout '" + name + "': presets are "
                    + new java.util.TreeSet<>(PRESETS.keySet()));
        }
        return l;
    }

    /**
     * Bytes of one token's cache across all layers.
     *
     * @return bytes per token
     */
    public long bytesPerToken() {
        return (long) kind.tensorsPerLayer() * layers * kvHeads * headDim * dtype.bytes();
    }

    /**
     * Bytes of a chunk of {@code tokens} tokens.
     *
     * @param tokens tokens in the chunk
     * @return bytes of the chunk
     */
    public long bytesPerChunk(int tokens) {
        return bytesPerToken() * tokens;
    }

    /**
     * Bytes of one head's row for one token ({@code headDim} elements).
     *
     * @return bytes per head row
     */
    long rowBytes() {
        return (long) headDim * dtype.bytes();
    }

    /**
     * A short description for metadata and messages: {@code KV_2LTD 32x8x128 bfloat16}.
     *
     * @return the description
     */
    public String describe() {
        return kind + " " + layers + "x" + kvHeads + "x" + headDim + " " + dtype.keyName();
    }
}
