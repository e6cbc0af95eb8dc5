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
}
