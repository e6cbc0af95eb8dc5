package io.phxfs.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * Sharded model directories written in the shapes that real writers give their files, for the
 * CLI's warm-up. The JIT compiles a method for the inputs it has seen; an input of a shape it
 * has not seen (an index with line breaks, a header padded with spaces, a second dtype) hits an
 * uncommon trap in that compiled code, and the method goes back to the interpreter in the middle
 * of the user's load. On the H200 this sent the index reader of a transformers-written index
 * back to the interpreter: 1.0 of the load's 1.2 ms locate.
 */
final class WarmUpModels {
    /** How the index and the headers are laid out. */
    enum Style {
        /**
         * transformers' index ({@code json.dumps(indent=2, sort_keys=True) + "\n"}) over shards
         * written by safetensors itself (compact header padded with spaces to 8 bytes).
         */
        TRANSFORMERS,
        /** Jackson's pretty printer ({@code "key" : value}), as {@code phoenix gen-model} writes it; unpadded headers. */
        JACKSON,
        /** Everything on one line without a space. */
        COMPACT
    }

    private WarmUpModels() {
    }

    /**
     * Writes {@code shards} shards of {@code perShard} tensors each into {@code dir} with an
     * index: bf16 matrices, and with {@code norms} a float32 vector after every third one (a
     * header of one dtype only is unusual), all zero.
     *
     * @return the first shard
     */
    static Path write(Path dir, Style style, int shards, int perShard, boolean norms) throws IOException {
        TreeMap<String, String> weightMap = new TreeMap<>();
        long total = 0;
        Path first = null;
        for (int s = 1; s <= shards; s++) {
            String file = String.format(java.util.Locale.ROOT, "model-%05d-of-%05d.safetensors", s, shards);
            StringBuilder h = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
            long offset = 0;
            List<String> names = new ArrayList<>();
            for (int i = 0; i < perShard; i++) {
                int layer = (s - 1) * perShard + i;
                String name = "model.layers." + layer + ".self_attn.q_proj.weight";
                long bytes = 16 * 8 * 2;
                h.append(",\"").append(name).append("\":{\"dtype\":\"BF16\",\"shape\":[16,8],\"data_offsets\":[")
                        .append(offset).append(',').append(offset + bytes).append("]}");
                offset += bytes;
                names.add(name);
                if (norms && i % 3 == 2) {
                    String norm = "model.layers." + layer + ".input_layernorm.weight";
                    h.append(",\"").append(norm).append("\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[")
                            .append(offset).append(',').append(offset + 64).append("]}");
                    offset += 64;
                    names.add(norm);
                }
            }
            h.append('}');
            if (style == Style.TRANSFORMERS) {
                while (h.length() % 8 != 0) {
                    h.append(' ');
                }
            }
            byte[] header = h.toString().getBytes(StandardCharsets.UTF_8);
            Path f = dir.resolve(file);
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length);
                ch.write(len, 0);
                ch.write(ByteBuffer.wrap(header), 8);
                ch.write(ByteBuffer.allocate((int) offset), 8 + header.length);
            }
            for (String n : names) {
                weightMap.put(n, file);
            }
            total += offset;
            if (first == null) {
                first = f;
            }
        }
        Files.writeString(dir.resolve("model.safetensors.index.json"), index(style, total, weightMap));
        return first;
    }

    private static String index(Style style, long total, TreeMap<String, String> weightMap) {
        String colon = switch (style) {
            case TRANSFORMERS -> "\": ";
            case JACKSON -> "\" : ";
            case COMPACT -> "\":";
        };
        boolean pretty = style != Style.COMPACT;
        String nl1 = pretty ? "\n  " : "";
        String nl2 = pretty ? "\n    " : "";
        StringBuilder b = new StringBuilder("{").append(nl1).append("\"metadata").append(colon).append('{')
                .append(nl2).append("\"total_size").append(colon).append(total).append(nl1).append("},")
                .append(nl1).append("\"weight_map").append(colon).append('{');
        boolean firstEntry = true;
        for (var e : weightMap.entrySet()) {
            b.append(firstEntry ? "" : ",").append(nl2).append('"').append(e.getKey()).append(colon).append('"')
                    .append(e.getValue()).append('"');
            firstEntry = false;
        }
        b.append(nl1).append('}').append(pretty ? "\n" : "").append('}');
        return style == Style.TRANSFORMERS ? b.append('\n').toString() : b.toString();
    }
}
