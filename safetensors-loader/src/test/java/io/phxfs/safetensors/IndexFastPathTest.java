package io.phxfs.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The index's byte-level reader ({@link FastIndexJson}) against Jackson's path on the same
 * bytes: for every input the two ways give the same weight_map, or fail with the same message.
 * Valid indexes of the writers' shapes, then thousands of random mutants of them.
 */
class IndexFastPathTest {
    @TempDir
    Path dir;

    private static final String[] SHAPES = {
        // transformers' save_pretrained
        "{\n  \"metadata\": {\n    \"total_size\": 16060522496\n  },\n  \"weight_map\": {\n"
                + "    \"lm_head.weight\": \"model-00002-of-00002.safetensors\",\n"
                + "    \"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\",\n"
                + "    \"model.norm.weight\": \"model-00002-of-00002.safetensors\"\n  }\n}\n",
        // other fields of any JSON value beside it, weight_map first
        "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"},"
                + "\"metadata\":{\"total_size\":-1.5e+3,\"format\":\"pt\",\"x\":[true,false,null,[],{}],\"n\":0}}",
        // names in other scripts, a nested metadata
        "{\"metadata\":{\"a\":{\"b\":{\"c\":[1,2,{\"d\":\"e\"}]}}},\"weight_map\":{\"模型.权重\":\"model-00001-of-00002.safetensors\","
                + "\"émbed\":\"model-00001-of-00002.safetensors\"}}",
    };

    private Path index() throws IOException {
        for (String shard : List.of("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")) {
            if (!Files.exists(dir.resolve(shard))) {
                Files.write(dir.resolve(shard), new byte[16]);
            }
        }
        Files.createDirectories(dir.resolve("sub"));
        return dir.resolve(ModelFiles.INDEX_FILE);
    }

    @Test
    void theWritersShapesTakeTheFastPathAndAgree() throws IOException {
        Path idx = index();
        for (String s : SHAPES) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            assertNotNull(FastIndexJson.parse(b), s);
            assertTrue(agree(b, idx), s);
        }
        FastIndexJson.Parsed p = FastIndexJson.parse(SHAPES[0].getBytes(StandardCharsets.UTF_8));
        // a run of one shard's entries shares one String; another shard's is another
        assertEquals(List.of("lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"), p.names());
        assertEquals("model-00001-of-00002.safetensors", p.files().get(1));
    }

    /**
     * An index of several read pieces ({@link SafetensorsParser#READ_PIECE}), of names with
     * multi-byte characters: read from disk, it gives the weight_map of its bytes, every entry
     * in order (a piece loop that stopped early or overwrote a piece leaves JSON that breaks).
     */
    @Test
    void anIndexOfManyReadPiecesReadsWhole() throws IOException {
        Path idx = index();
        StringBuilder b = new StringBuilder("{\"metadata\":{\"total_size\":32},\"weight_map\":{");
        List<String> names = new ArrayList<>();
        int n = 0;
        while (b.length() < 5 * SafetensorsParser.READ_PIECE + 1000) {
            String name = "model.layers." + n + ".专家." + "é".repeat(n % 7) + ".weight";
            names.add(name);
            b.append(n == 0 ? "" : ",").append('"').append(name).append("\":\"model-0000").append(1 + n % 2)
                    .append("-of-00002.safetensors\"");
            n++;
        }
        byte[] bytes = b.append("}}").toString().getBytes(StandardCharsets.UTF_8);
        Files.write(idx, bytes);
        Map<String, Path> read = IndexFile.read(idx, Long.MAX_VALUE);
        assertEquals(names, new ArrayList<>(read.keySet()));
        assertEquals(IndexFile.weightMap(bytes, idx, false), read);
        assertEquals(dir.resolve("model-00002-of-00002.safetensors").toAbsolutePath(), read.get(names.get(1)));
    }

    @Test
    void unusualInputGoesToJackson() {
        for (String s : List.of("{\"weight_map\":{\"a\\u0041\":\"x\"}}", "{\"weight_map\":{\"a\":\"x\"},\"weight_map\":{}}",
                "{\"metadata\":{\"n\":01},\"weight_map\":{}}", "{\"metadata\":{\"n\":+1},\"weight_map\":{}}",
                "{\"metadata\":{\"n\":1.},\"weight_map\":{}}", "{\"metadata\":{}}", "{\"weight_map\":{\"a\":1}}",
                "{\"weight_map\":{}} x", "[]", "{\"weight_map\":{\"a\":\"x\",}}", "{\"weight_map\":{\"a\":\"x\"}",
                "{\"metadata\":" + "[".repeat(40) + "]".repeat(40) + ",\"weight_map\":{}}")) {
            assertNull(FastIndexJson.parse(s.getBytes(StandardCharsets.UTF_8)), s);
        }
    }

    @Test
    void randomMutantsGiveTheSameAnswerBothWays() throws IOException {
        Path idx = index();
        Random rnd = new Random(20261202);
        byte[] alphabet = "{}[]:,\" \\\n0123456789-+.eEtrufalsn/.xmodel-00001-of-00002.safetensorsweight_mapsub..\u00e9"
                .getBytes(StandardCharsets.UTF_8);
        int fast = 0;
        int total = 0;
        for (String shape : SHAPES) {
            byte[] base = shape.getBytes(StandardCharsets.UTF_8);
            for (int i = 0; i < 1500; i++) {
                byte[] b = mutate(base, rnd, alphabet);
                if (Utf8.firstInvalid(b, b.length) >= 0) {
                    continue; // IndexFile.read refuses invalid UTF-8 before either reader runs
                }
                total++;
                if (agree(b, idx)) {
                    fast++;
                }
            }
        }
        // most mutants break the JSON; enough stay valid that the comparison means something
        assertTrue(fast > 200, fast + " of " + total + " mutants answered by the fast path");
    }

    private static byte[] mutate(byte[] base, Random rnd, byte[] alphabet) {
        List<Byte> b = new ArrayList<>(base.length + 8);
        for (byte x : base) {
            b.add(x);
        }
        int edits = 1 + rnd.nextInt(3);
        for (int e = 0; e < edits; e++) {
            int at = rnd.nextInt(b.size() + 1);
            switch (rnd.nextInt(4)) {
                case 0 -> { if (at < b.size()) b.remove(at); }
                case 1 -> b.add(at, alphabet[rnd.nextInt(alphabet.length)]);
                case 2 -> { if (at < b.size()) b.set(at, alphabet[rnd.nextInt(alphabet.length)]); }
                default -> { // duplicate a span: repeated keys, repeated weight_maps
                    if (at < b.size()) {
                        int len = Math.min(b.size() - at, 1 + rnd.nextInt(60));
                        b.addAll(at, new ArrayList<>(b.subList(at, at + len)));
                    }
                }
            }
        }
        byte[] out = new byte[b.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = b.get(i);
        }
        return out;
    }

    /** Asserts both ways agree; returns whether the fast reader answered. */
    private static boolean agree(byte[] b, Path idx) throws IOException {
        String what = new String(b, StandardCharsets.UTF_8);
        Map<String, Path> slow = null;
        String slowError = null;
        try {
            slow = IndexFile.weightMap(b, idx, false);
        } catch (SafetensorsFormatException e) {
            slowError = e.getMessage();
        }
        Map<String, Path> quick = null;
        String quickError = null;
        try {
            quick = IndexFile.weightMap(b, idx, true);
        } catch (SafetensorsFormatException e) {
            quickError = e.getMessage();
        }
        if (slowError != null || quickError != null) {
            assertEquals(slowError, quickError, what);
        } else {
            // same entries in the same order
            assertEquals(new ArrayList<>(slow.entrySet()), new ArrayList<>(quick.entrySet()), what);
        }
        FastIndexJson.Parsed p = FastIndexJson.parse(b);
        if (p != null && slowError != null && !slowError.contains("weight_map") && !slowError.contains("shard")) {
            fail("the fast reader accepted what Jackson refuses (" + slowError + "): " + what);
        }
        return p != null;
    }
}
