package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Malformed safetensors files and model directories, generated on the spot: each breaks the
 * format (or the index contract) in one way. Shared with the CLI tests through the test jar.
 */
public final class MalformedCorpus {
    /**
     * @param name     what is wrong, for test names
     * @param input    the path to load (a file, a model directory or an index)
     * @param blamed   the file the message must name
     * @param expected a fragment of the message
     * @param format   true when a {@link SafetensorsFormatException} is expected; false for a plain
     *                 IllegalArgumentException (no model at the path)
     */
    public record Case(String name, Path input, Path blamed, String expected, boolean format) {
        @Override
        public String toString() {
            return name;
        }
    }

    /** A valid two-tensor header and its 12 data bytes, the base of most cases. */
    static final String A = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
    static final String B = "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]}";

    private final Path dir;
    private final List<Case> cases = new ArrayList<>();

    private MalformedCorpus(Path dir) {
        this.dir = dir;
    }

    /** Writes the corpus under {@code dir}. */
    public static List<Case> generate(Path dir) throws IOException {
        MalformedCorpus c = new MalformedCorpus(dir);
        c.files();
        c.headers();
        c.layouts();
        c.indexes();
        return List.copyOf(c.cases);
    }

    private void files() throws IOException {
        bytes("empty-file", new byte[0], "file is empty");
        bytes("seven-bytes", new byte[] {1, 0, 0, 0, 0, 0, 0}, "only 7 bytes");
        byte[] h = ("{" + A + "," + B + "}").getBytes(StandardCharsets.UTF_8);
        bytes("truncated-header", TestFiles.raw(h.length, java.util.Arrays.copyOf(h, h.length / 2), new byte[0]),
                "is larger than the file (");
        bytes("length-beyond-file", TestFiles.raw(1_000_000, h, new byte[12]),
                "0xf4240 (1000000 bytes) is larger than the file (");
        bytes("length-2^63", TestFiles.raw(Long.MIN_VALUE, h, new byte[12]),
                "0x8000000000000000 (9223372036854775808 bytes) is larger than the file");
        bytes("length-2^64-1", TestFiles.raw(-1L, h, new byte[12]),
                "(18446744073709551615 bytes) is larger than the file");
        bytes("length-over-limit", TestFiles.raw(100_000_001L, h, new byte[12]), "is larger than the file");
        bytes("length-zero", TestFiles.raw(0, new byte[0], new byte[12]), "0 bytes is too short");
        bytes("length-one", TestFiles.raw(1, new byte[] {'{'}, new byte[0]), "1 byte is too short");
        bytes("byte-order-mark", TestFiles.withHeader("\uFEFF{" + A + "," + B + "}", 12), "byte order mark");
        byte[] bad = ("{\"a\u00e9\":{}}").getBytes(StandardCharsets.UTF_8);
        bad[3] = (byte) 0xC3;
        bad[4] = (byte) 0x28; // C3 needs a continuation byte; '(' is not one
        bytes("non-utf8", TestFiles.raw(bad.length, bad, new byte[0]), "not valid UTF-8");
        byte[] overlong = "{\"a__\":{}}".getBytes(StandardCharsets.UTF_8);
        overlong[3] = (byte) 0xC0;
        overlong[4] = (byte) 0xAF; // overlong '/'
        bytes("overlong-utf8", TestFiles.raw(overlong.length, overlong, new byte[0]), "not valid UTF-8");
    }

    private void headers() throws IOException {
        header("json-array", "[1,2]", 0, "not a JSON object");
        header("json-string", "\"tensors\"", 0, "not a JSON object");
        header("json-truncated", "{" + A + ",\"b\":", 12, "not valid JSON");
        header("json-garbage", "{" + A + "," + B + "} xyz", 12, "not valid JSON");
        header("json-second-object", "{" + A + "," + B + "} {}", 12, "trailing data after the header's JSON object");
        header("duplicate-name", "{" + A + "," + B.replace("\"b\"", "\"a\"") + "}", 12, "appears twice");
        header("unknown-dtype", "{" + A.replace("F32", "F128") + "}", 8, "unknown dtype 'F128'");
        header("dtype-lowercase", "{" + A.replace("F32", "f32") + "}", 8, "unknown dtype 'f32'");
        header("dtype-not-string", "{" + A.replace("\"F32\"", "32") + "}", 8, "dtype is a number");
        header("negative-shape", "{" + A.replace("[2]", "[-2]") + "}", 8, "shape[0] is negative");
        header("fractional-shape", "{" + A.replace("[2]", "[2.5]") + "}", 8, "shape[0] is 2.5, not an integer");
        header("shape-number-overflow", "{" + A.replace("[2]", "[18446744073709551616]") + "}", 8,
                "overflows a 64-bit integer");
        header("shape-product-overflow", "{" + A.replace("[2]", "[4294967296,4294967296]") + "}", 8,
                "the size overflows 64 bits");
        // the reference multiplies left to right and fails at the overflow, before the zero that
        // would make the tensor empty (ParserTest's huge_empty, zero first, is valid there and here)
        header("shape-product-overflow-before-zero",
                "{" + A.replace("[2]", "[4294967296,4294967296,0]").replace("[0,8]", "[0,0]") + "}", 0,
                "the size overflows 64 bits");
        header("shape-huge-number", "{" + A.replace("[2]", "[" + "9".repeat(5000) + "]") + "}", 8, "not valid JSON");
        header("shape-not-array", "{" + A.replace("[2]", "2") + "}", 8, "shape is a number, not an array");
        header("shape-string-element", "{" + A.replace("[2]", "[\"2\"]") + "}", 8, "shape[0] is a string");
        header("offsets-three", "{" + A.replace("[0,8]", "[0,4,8]") + "}", 8, "data_offsets has 3 entries");
        header("offsets-one", "{" + A.replace("[0,8]", "[8]") + "}", 8, "data_offsets has 1 entries");
        header("shape-minus-zero", "{\"z\":{\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]}," + A + "}", 8,
                "shape[0] is -0, not an unsigned integer");
        header("offsets-minus-zero", "{" + A.replace("[0,8]", "[-0,8]") + "}", 8, "data_offsets[0] is -0");
        header("offsets-negative", "{" + A.replace("[0,8]", "[-8,0]") + "}", 8, "data_offsets[0] is negative");
        header("missing-offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "missing field 'data_offsets'");
        header("entry-not-object", "{\"a\":5}", 0, "entry is a number");
        header("metadata-non-string", "{\"__metadata__\":{\"format\":1}," + A + "}", 8,
                "value of 'format' is a number, not a string");
        header("metadata-not-object", "{\"__metadata__\":[\"pt\"]," + A + "}", 8, "is an array, not an object of strings");
        header("name-lone-surrogate", "{\"\\ud800\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                "not valid Unicode");
        header("f4-half-byte", "{\"q\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2,
                "not a whole number of bytes");
    }

    private void layouts() throws IOException {
        header("extent-mismatch", "{" + A.replace("[2]", "[3]") + "," + B + "}", 12, "needs 12 bytes");
        header("reversed-offsets", "{" + A.replace("[0,8]", "[8,0]") + "}", 8, "reversed");
        header("overlapping-offsets", "{" + A + "," + B.replace("[8,12]", "[4,8]") + "}", 8, "overlap");
        header("offsets-outside-file", "{" + A + "," + B.replace("[4]", "[992]").replace("[8,12]", "[8,1000]") + "}",
                12, "outside the file");
        header("hole-between", "{" + A + "," + B.replace("[8,12]", "[10,14]") + "}", 14, "hole of 2 bytes");
        header("hole-at-start", "{" + A.replace("[0,8]", "[4,12]") + "}", 12, "hole of 4 bytes");
        header("trailing-bytes", "{" + A + "," + B + "}", 16, "4 trailing bytes");
        header("no-tensors-but-data", "{\"__metadata__\":{}}", 3, "3 trailing bytes");
    }

    private void indexes() throws IOException {
        Path shard = dir.resolve("shards/model-00001-of-00002.safetensors");
        TestFiles.write(shard, TestFiles.withHeader("{" + A + "," + B + "}", 12));
        Path shard2 = dir.resolve("shards/model-00002-of-00002.safetensors");
        TestFiles.write(shard2, TestFiles.withHeader("{" + A.replace("\"a\"", "\"c\"") + "}", 8));
        Path outside = dir.resolve("outside.safetensors");
        TestFiles.write(outside, TestFiles.withHeader("{" + A.replace("\"a\"", "\"c\"") + "}", 8));

        index("index-dotdot", "{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\","
                + "\"c\":\"../outside.safetensors\"}", "leaves the model directory");
        index("index-nested-dotdot", "{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\","
                + "\"c\":\"sub/../../outside.safetensors\"}", "leaves the model directory");
        index("index-absolute", "{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\","
                + "\"c\":\"" + outside.toAbsolutePath() + "\"}", "is an absolute path");
        index("index-missing-shard", "{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\","
                + "\"c\":\"model-00009-of-00009.safetensors\"}", "does not exist");
        index("index-not-in-shard", "{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\","
                + "\"c\":\"model-00002-of-00002.safetensors\",\"zz\":\"model-00002-of-00002.safetensors\"}",
                "which does not contain it");
        index("index-non-string", "{\"a\":1}", "not given as a file name string");
        indexText("index-no-weight-map", "{\"metadata\":{\"total_size\":20}}", "no weight_map");
        indexText("index-not-json", "{\"weight_map\":{\"a\":", "index is not valid JSON");
        indexText("index-array", "[]", "index is not a JSON object");
        indexText("index-byte-order-mark", "\uFEFF{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                + "\"b\":\"model-00001-of-00002.safetensors\"}}", "starts with a UTF-8 byte order mark");

        // a tensor in two shards: both shards are listed, and both hold "a"
        Path twice = dir.resolve("twice");
        TestFiles.write(twice.resolve("s1.safetensors"), TestFiles.withHeader("{" + A + "}", 8));
        TestFiles.write(twice.resolve("s2.safetensors"), TestFiles.withHeader("{" + A + "," + B + "}", 12));
        Path idx = TestFiles.write(twice.resolve(ModelFiles.INDEX_FILE), ("{\"weight_map\":{\"a\":\"s1.safetensors\","
                + "\"b\":\"s2.safetensors\"}}").getBytes(StandardCharsets.UTF_8));
        cases.add(new Case("index-tensor-in-two-shards", twice, idx, "is claimed by two shards", true));

        // a listed shard that is itself malformed: the message names the shard
        Path broken = dir.resolve("broken");
        Path bad = TestFiles.write(broken.resolve("s1.safetensors"), new byte[] {9, 9, 9});
        TestFiles.write(broken.resolve(ModelFiles.INDEX_FILE),
                "{\"weight_map\":{\"a\":\"s1.safetensors\"}}".getBytes(StandardCharsets.UTF_8));
        cases.add(new Case("index-shard-malformed", broken, bad, "only 3 bytes", true));

        Path empty = Files.createDirectories(dir.resolve("no-model"));
        cases.add(new Case("directory-without-model", empty, empty, "no model.safetensors", false));
    }

    private void bytes(String name, byte[] content, String expected) throws IOException {
        Path f = TestFiles.write(dir.resolve(name + ".safetensors"), content);
        cases.add(new Case(name, f, f, expected, true));
    }

    private void header(String name, String json, int dataBytes, String expected) throws IOException {
        bytes(name, TestFiles.withHeader(json, dataBytes), expected);
    }

    private void index(String name, String weightMap, String expected) throws IOException {
        indexText(name, "{\"metadata\":{\"total_size\":20},\"weight_map\":" + weightMap + "}", expected);
    }

    private void indexText(String name, String json, String expected) throws IOException {
        Path f = TestFiles.write(dir.resolve("shards/" + name + ".index.json"), json.getBytes(StandardCharsets.UTF_8));
        cases.add(new Case(name, f, f, expected, true));
    }
}
