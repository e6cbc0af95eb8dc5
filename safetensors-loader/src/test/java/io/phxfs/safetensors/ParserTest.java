package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Valid corners of the format, and the sizes of every dtype. */
class ParserTest {
    @TempDir
    Path dir;

    @Test
    void everyDtypeHasTheSpecifiedWidth() {
        Map<Dtype, Integer> bits = Map.ofEntries(Map.entry(Dtype.BOOL, 8), Map.entry(Dtype.U8, 8), Map.entry(Dtype.I8, 8),
                Map.entry(Dtype.F8_E5M2, 8), Map.entry(Dtype.F8_E4M3, 8), Map.entry(Dtype.F8_E8M0, 8),
                Map.entry(Dtype.F8_E4M3FNUZ, 8), Map.entry(Dtype.F8_E5M2FNUZ, 8),
                Map.entry(Dtype.I16, 16), Map.entry(Dtype.U16, 16), Map.entry(Dtype.F16, 16), Map.entry(Dtype.BF16, 16),
                Map.entry(Dtype.I32, 32), Map.entry(Dtype.U32, 32), Map.entry(Dtype.F32, 32), Map.entry(Dtype.C64, 64),
                Map.entry(Dtype.F64, 64), Map.entry(Dtype.I64, 64), Map.entry(Dtype.U64, 64), Map.entry(Dtype.F4, 4),
                Map.entry(Dtype.F6_E2M3, 6), Map.entry(Dtype.F6_E3M2, 6));
        assertEquals(Dtype.values().length, bits.size());
        bits.forEach((d, b) -> assertEquals(b, d.bits(), d.name()));
        assertEquals(3, Dtype.F4.bytesFor(6));
        assertEquals(3, Dtype.F6_E2M3.bytesFor(4));
        assertThrows(ArithmeticException.class, () -> Dtype.F6_E3M2.bytesFor(2));
        assertThrows(ArithmeticException.class, () -> Dtype.F64.bytesFor(Long.MAX_VALUE / 4));
        assertEquals(Dtype.BF16, Dtype.fromTorchName("torch.bfloat16").orElseThrow());
        assertEquals(Dtype.F8_E4M3, Dtype.fromTorchName("float8_e4m3fn").orElseThrow());
    }

    @Test
    void subByteAndNewerDtypesLoadWithTheirPackedSizes() throws IOException {
        List<SafetensorsWriter.Spec> specs = List.of(spec("f4", Dtype.F4, 3, 4), spec("f6a", Dtype.F6_E2M3, 8),
                spec("f6b", Dtype.F6_E3M2, 2, 2), spec("e8m0", Dtype.F8_E8M0, 5), spec("c64", Dtype.C64, 3));
        Path f = TestFiles.valid(dir.resolve("new.safetensors"), Map.of(), specs);
        SafetensorsHeader h = SafetensorsParser.standard().parse(f);
        assertEquals(6, h.tensor("f4").orElseThrow().nbytes());
        assertEquals(6, h.tensor("f6a").orElseThrow().nbytes());
        assertEquals(3, h.tensor("f6b").orElseThrow().nbytes());
        assertEquals(5, h.tensor("e8m0").orElseThrow().nbytes());
        assertEquals(24, h.tensor("c64").orElseThrow().nbytes());
    }

    @Test
    void headerOrderNeedNotBeOffsetOrder() throws IOException {
        String json = "{\"__metadata__\":{\"k\":\"v\"},\"z\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]},"
                + "\"y\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]}}   ";
        Path f = TestFiles.write(dir.resolve("order.safetensors"), TestFiles.withHeader(json, 6));
        SafetensorsHeader h = SafetensorsParser.standard().parse(f);
        assertEquals(List.of("y", "z"), h.tensors().stream().map(TensorInfo::name).toList());
        assertEquals(Map.of("k", "v"), h.metadata());
        assertEquals(8 + json.length(), h.dataStart());
    }

    @Test
    void emptyModelAndNullMetadataAreValid() throws IOException {
        Path f = TestFiles.write(dir.resolve("empty.safetensors"), TestFiles.withHeader("{\"__metadata__\":null}", 0));
        SafetensorsHeader h = SafetensorsParser.standard().parse(f);
        assertTrue(h.tensors().isEmpty());
        assertTrue(h.metadata().isEmpty());
        Path g = TestFiles.write(dir.resolve("braces.safetensors"), TestFiles.withHeader("{}", 0));
        assertEquals(0, SafetensorsParser.standard().parse(g).tensors().size());
    }

    @Test
    void zeroSizedTensorsMayShareAnOffset() throws IOException {
        String json = "{\"e1\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"e2\":{\"dtype\":\"F32\",\"shape\":[4,0],\"data_offsets\":[4,4]},"
                + "\"huge_empty\":{\"dtype\":\"F64\",\"shape\":[0,9223372036854775807,9223372036854775807],\"data_offsets\":[4,4]}}";
        Path f = TestFiles.write(dir.resolve("zeros.safetensors"), TestFiles.withHeader(json, 4));
        SafetensorsHeader h = SafetensorsParser.standard().parse(f);
        assertEquals(4, h.tensors().size());
        assertArrayEquals(new long[] {4, 0}, h.tensor("e2").orElseThrow().shape());
    }

    @Test
    void writerOutputRoundTrips() throws IOException {
        List<SafetensorsWriter.Spec> specs = List.of(spec("w", Dtype.BF16, 3, 5), spec("b", Dtype.F32, 5),
                spec("s", Dtype.I64));
        Path f = TestFiles.valid(dir.resolve("w.safetensors"), Map.of("format", "pt"), specs);
        SafetensorsHeader h = SafetensorsParser.standard().parse(f);
        assertEquals(0, h.headerLength() % 8, "header padded to 8 bytes");
        assertEquals(Files.size(f), h.fileSize());
        assertEquals(30 + 20 + 8, h.dataBytes());
        assertEquals(List.of("w", "b", "s"), h.tensors().stream().map(TensorInfo::name).toList());
        assertEquals(0, h.tensor("s").orElseThrow().rank());
    }

    @Test
    void aDirectoryIsNotAFile() {
        assertThrows(IOException.class, () -> SafetensorsParser.standard().parse(dir));
    }

    @Test
    void messagesEscapeControlCharactersInNames() throws IOException {
        String json = "{\"bad\\nname\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,1]}}";
        Path f = TestFiles.write(dir.resolve("ctl.safetensors"), TestFiles.withHeader(json, 1));
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class,
                () -> SafetensorsParser.standard().parse(f));
        assertTrue(e.getMessage().contains("bad\\u000aname"), e.getMessage());
        assertTrue(e.getMessage().startsWith(f + ": tensor 'bad"), e.getMessage());
    }
}
