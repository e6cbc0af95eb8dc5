package io.phxfs.safetensors;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Files laid out byte for byte as writers other than this repository's lay them out, which the
 * reference implementation (the Rust {@code safetensors} crate) accepts: each loads, and every
 * tensor's SHA-256, computed from the loaded memory, is the one computed in Python from the
 * bytes written ({@link #data}).
 */
@Tag("io")
class OtherWritersTest {
    @TempDir
    Path dir;

    /** Tensor {@code k}'s data: byte i is {@code k * 41 + i * 7 + 1}. */
    static byte[] data(int k, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (k * 41 + i * 7 + 1);
        }
        return b;
    }

    /**
     * The length prefix, {@code header} padded with spaces to a multiple of {@code pad} bytes
     * (the Rust writer pads to 8; 1 for none), then the data sections in file order.
     */
    static byte[] file(String header, int pad, byte[]... data) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        int padded = (h.length + pad - 1) / pad * pad;
        long n = padded;
        for (int i = 0; i < 8; i++) {
            out.write((int) (n >>> (8 * i)));
        }
        out.writeBytes(h);
        out.writeBytes(" ".repeat(padded - h.length).getBytes(StandardCharsets.US_ASCII));
        for (byte[] d : data) {
            out.writeBytes(d);
        }
        return out.toByteArray();
    }

    private static Map<String, String> loadedSha256(Path model) throws IOException {
        try (LoadedModel m = WeightLoader.builder().toHost().build().load(model)) {
            return TensorDigests.sha256(m);
        }
    }

    /** safetensors 0.8 (torch float8_e4m3fnuz / float8_e5m2fnuz, AMD's FP8) writes these two dtypes. */
    @Test
    void fnuzFloat8OfSafetensors08Loads() throws IOException {
        String header = "{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"a\":{\"dtype\":\"F8_E4M3FNUZ\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                + "\"b\":{\"dtype\":\"F8_E5M2FNUZ\",\"shape\":[5],\"data_offsets\":[6,11]}}";
        Path f = TestFiles.write(dir.resolve("fnuz.safetensors"), file(header, 8, data(0, 6), data(1, 5)));
        SafetensorsHeader h = SafetensorsParser.standard().parse(f);
        assertEquals(Dtype.F8_E4M3FNUZ, h.tensor("a").orElseThrow().dtype());
        assertEquals(Dtype.F8_E5M2FNUZ, h.tensor("b").orElseThrow().dtype());
        assertArrayEquals(new long[] {2, 3}, h.tensor("a").orElseThrow().shape());
        assertEquals(Dtype.F8_E4M3FNUZ, Dtype.fromTorchName("torch.float8_e4m3fnuz").orElseThrow());
        assertEquals(Dtype.F8_E5M2FNUZ, Dtype.fromTorchName("float8_e5m2fnuz").orElseThrow());
        assertEquals(Map.of(
                "a", "6c113ad1fc77d52f6928ec89e86211aebf09bfbf2862ca345f3322a6c89add29",
                "b", "514d03f053b89a911946d61f171057561cc8d06f384b9e69ec95be9ab5e79baa"), loadedSha256(f));
    }

    /**
     * The reference implementation skips fields of a tensor entry besides dtype, shape and
     * data_offsets, whatever their values (serde without deny_unknown_fields): such a file was
     * refused here ("unknown field"). A field it needs is still needed.
     */
    @Test
    void fieldsBesidesTheThreeAreSkippedAsTheReferenceSkipsThem() throws IOException {
        String header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"layout\":\"C\"},"
                + "\"b\":{\"quant\":{\"scheme\":\"x\",\"bits\":[4,8]},\"dtype\":\"U8\",\"shape\":[3],"
                + "\"data_offsets\":[8,11],\"note\":null,\"n\":1.5}}";
        Path f = TestFiles.write(dir.resolve("extra.safetensors"), file(header, 8, data(0, 8), data(1, 3)));
        assertEquals(Map.of(
                "a", "5caa048e02e52030c521f8966a8e1f1a233dd165dbe326c369362a6227d7881f",
                "b", "a8863c6507d240878a5663c6e9361fb003b5a3d2051b55a52f7b71a0a87179b7"), loadedSha256(f));

        Path typo = TestFiles.write(dir.resolve("typo.safetensors"),
                file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offset\":[0,8]}}", 8, data(0, 8)));
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class,
                () -> SafetensorsParser.standard().parse(typo));
        assertEquals(typo + ": tensor 'a': missing field 'data_offsets'", e.getMessage());
    }

    /**
     * An index that leaves out a tensor its shard holds (a hand-edited or stale index): transformers,
     * accelerate and vLLM load every tensor of every shard the index names, and so does this
     * loader now; it refused the model ("is in shard ... but not in the weight_map"). A name
     * in two shards is still refused, listed or not.
     */
    @Test
    void aTensorItsShardHoldsButTheIndexLeavesOutLoadsFromThatShard() throws IOException {
        Path model = java.nio.file.Files.createDirectories(dir.resolve("sharded"));
        TestFiles.write(model.resolve("model-00001-of-00002.safetensors"), file("{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}", 8, data(0, 8), data(1, 3)));
        Path second = TestFiles.write(model.resolve("model-00002-of-00002.safetensors"),
                file("{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                + "\"d\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[4,5]}}", 8, data(2, 4), data(3, 1)));
        String index = "{\n  \"metadata\": {\n    \"total_size\": 16\n  },\n  \"weight_map\": {\n"
                + "    \"a\": \"model-00001-of-00002.safetensors\",\n    \"b\": \"model-00001-of-00002.safetensors\",\n"
                + "    \"c\": \"model-00002-of-00002.safetensors\"\n  }\n}\n";
        TestFiles.write(model.resolve(ModelFiles.INDEX_FILE), index.getBytes(StandardCharsets.UTF_8));
        assertEquals(second.toAbsolutePath(), ModelFiles.open(model).fileOf("d").orElseThrow().file().toAbsolutePath());
        assertEquals(Map.of(
                "a", "5caa048e02e52030c521f8966a8e1f1a233dd165dbe326c369362a6227d7881f",
                "b", "a8863c6507d240878a5663c6e9361fb003b5a3d2051b55a52f7b71a0a87179b7",
                "c", "00d8a09804c931f90a3f3de1058463abc141ec1f5741d6b78a69ed1a3818ab17",
                "d", "cbe5cfdf7c2118a9c3d78ef1d684f3afa089201352886449a06a6511cfef74a7"), loadedSha256(model));

        // "d" in both shards, listed in neither
        TestFiles.write(model.resolve("model-00001-of-00002.safetensors"), file("{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]},"
                + "\"d\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[11,12]}}", 8, data(0, 8), data(1, 3), data(3, 1)));
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class, () -> ModelFiles.open(model));
        assertEquals(model.resolve(ModelFiles.INDEX_FILE) + ": tensor 'd': is claimed by two shards:"
                + " model-00001-of-00002.safetensors and model-00002-of-00002.safetensors", e.getMessage());
    }
}
