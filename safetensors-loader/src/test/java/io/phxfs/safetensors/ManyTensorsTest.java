package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Checkpoints of many small tensors (mixture-of-experts models): a 100,000-tensor header is
 * parsed and planned within a bounded time and allocation, and the byte-level header reader
 * agrees with the full parser on every input it accepts (it hands everything else over).
 */
class ManyTensorsTest {
    @TempDir
    Path dir;

    /** 100,000 tensors of 16 bytes: a header of about 9 MB, as a large MoE checkpoint's. */
    @Test
    void aHundredThousandTensorsParseAndPlanInBoundedTimeAndMemory() throws IOException {
        int n = 100_000;
        List<SafetensorsWriter.Spec> specs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            specs.add(spec("model.layers." + (i / 1000) + ".mlp.experts." + (i % 1000) + ".w" + (i % 3) + ".weight",
                    Dtype.BF16, 2, 4));
        }
        Path f = TestFiles.valid(dir.resolve("many.safetensors"), Map.of("format", "pt"), specs);
        long headerBytes = SafetensorsParser.standard().parse(f).headerLength(); // also warms the code up
        long before = usedAfterGc();
        long t0 = System.nanoTime();
        ModelFiles model = ModelFiles.open(f);
        ReadPlan plan = WeightLoader.builder().toDevice(0).build().plan(model);
        double seconds = (System.nanoTime() - t0) / 1e9;
        long retained = usedAfterGc() - before;
        assertEquals(n, plan.tensors().size());
        assertEquals(1, plan.groups().size(), "tensors that tile the file are one read group");
        // generous bounds (a 2-core CI machine shared with other jobs), not a performance
        // claim; a step quadratic in the tensor count would take minutes
        assertTrue(seconds < 20, "parse + plan of " + n + " tensors took " + seconds + " s");
        // what the parsed model and its plan keep: names, shapes, tensor infos, maps, plan
        // views; a few hundred bytes per tensor, a small multiple of the header (the surefire
        // heap is 256 MiB: a parse that kept copies per token would not fit)
        assertTrue(retained < 20L * headerBytes, retained + " bytes retained for a header of " + headerBytes + " bytes");
        assertTrue(retained > n * 16L, "the measurement sees the model: " + retained + " bytes");
        assertEquals(n, model.names().size());
    }

    @Test
    void theByteReaderTakesTheUsualShapeAndLeavesTheRestToTheFullParser() {
        String usual = "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                + " \"b\" : { \"shape\" : [ ] , \"data_offsets\" : [ 24 , 26 ] , \"dtype\" : \"BF16\" } }\n";
        assertNotNull(fast(usual));
        assertAgree(usual);
        for (String unusual : new String[] {
                "{\"a\\u0062\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", // an escape
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", // a leading zero
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1234567890123456789],\"data_offsets\":[0,4]}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}",
                "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                "{\"a\":{\"dtype\":\"X32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}",
                "{\"__metadata__\":{\"k\":1}}",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}",
                "[]"}) {
            assertNull(fast(unusual), unusual);
            assertAgree(unusual);
        }
        // a name given twice the byte reader leaves to the header it builds; the parse of the
        // file then says what the full parser says
        String twice = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
        assertNotNull(fast(twice));
        assertAgree(twice);
    }

    @Test
    void aNameGivenTwiceIsReportedAsTheFullParserReportsIt() throws IOException {
        for (String twice : new String[] {
                // the layout is valid: only the header's name map sees the repeat
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                // the layout is broken too (the same bytes twice): the repeat is still what is reported
                "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"}) {
            byte[] h = twice.getBytes(StandardCharsets.UTF_8);
            String full = assertThrows(SafetensorsFormatException.class,
                    () -> new HeaderJson(Path.of("h"), SafetensorsParser.DEFAULT_MAX_HEADER_BYTES).parse(h, h.length)).getMessage();
            Path f = TestFiles.write(dir.resolve("twice.safetensors"), TestFiles.withHeader(twice, 8));
            String got = assertThrows(SafetensorsFormatException.class, () -> SafetensorsParser.standard().parse(f)).getMessage();
            assertTrue(got.contains("appears twice in the header"), got);
            assertEquals(full.substring(full.indexOf(": ") + 2), got.substring(got.indexOf(": ") + 2), got);
        }
    }

    /** Random mutations of valid headers: wherever the byte reader answers, the full parser answers the same. */
    @Test
    void onMutantsTheByteReaderAgreesWithTheFullParserOrStandsAside() throws IOException {
        List<byte[]> seeds = MutationTest.validFiles(dir);
        SplittableRandom rnd = new SplittableRandom(20261201);
        int answered = 0;
        int invalid = 0;
        for (int i = 0; i < 4000; i++) {
            byte[] file = MutationTest.mutate(seeds.get(rnd.nextInt(seeds.size())), rnd, new StringBuilder());
            if (file.length < 8) {
                continue;
            }
            long len = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
            if (len < 1 || len > file.length - 8) {
                continue;
            }
            byte[] header = Arrays.copyOfRange(file, 8, 8 + (int) len);
            if (Utf8.firstInvalid(header, header.length) >= 0) {
                // the byte reader is the usual header's UTF-8 check: it must never answer here
                invalid++;
                assertNull(FastHeaderJson.parse(header, header.length, Long.MAX_VALUE), "answered on invalid UTF-8: "
                        + new String(header, StandardCharsets.ISO_8859_1));
                continue;
            }
            if (assertAgree(header, file.length - 8L - len)) {
                answered++;
            }
        }
        assertTrue(answered > 500, "the byte reader answered only " + answered + " mutants");
        assertTrue(invalid > 50, "only " + invalid + " mutants were invalid UTF-8");
    }

    /**
     * The byte reader checks UTF-8 itself (only where a string holds a byte past ASCII): valid
     * names and metadata in any script are read as the full parser reads them, and a bad byte
     * anywhere, in a name, a metadata value or between tokens, sends the header to the full path.
     */
    @Test
    void theByteReaderReadsUnicodeAndStandsAsideOnInvalidUtf8() {
        String valid = "{\"__metadata__\":{\"描述\":\"Модель ✓ 😀\"},\"层.0.weight\":{\"dtype\":\"F32\","
                + "\"shape\":[1],\"data_offsets\":[0,4]},\"é\":{\"dtype\":\"U8\",\"shape\":[4],"
                + "\"data_offsets\":[4,8]}}";
        assertTrue(assertAgree(valid), "the byte reader stood aside on valid UTF-8");
        assertEquals(List.of("层.0.weight", "é"), fast(valid).tensors().stream().map(TensorInfo::name).toList());
        assertEquals("Модель ✓ 😀", fast(valid).metadata().get("描述"));
        byte[] utf8 = valid.getBytes(StandardCharsets.UTF_8);
        for (String at : List.of("层", "é", "Модель", "😀")) {
            int i = indexOf(utf8, at.getBytes(StandardCharsets.UTF_8));
            for (byte bad : new byte[] {(byte) 0xff, (byte) 0xc0, (byte) 0x80, '('}) {
                byte[] b = utf8.clone();
                b[i + 1] = bad; // a lead byte followed by what cannot continue it
                if (Utf8.firstInvalid(b, b.length) >= 0) {
                    assertNull(FastHeaderJson.parse(b, b.length, Long.MAX_VALUE), at + " with byte " + bad);
                }
            }
        }
        byte[] between = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}\u00e9}"
                .getBytes(StandardCharsets.UTF_8);
        assertNull(FastHeaderJson.parse(between, between.length, Long.MAX_VALUE), "a non-ASCII byte outside a string");
    }

    private static int indexOf(byte[] h, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= h.length; i++) {
            for (int k = 0; k < needle.length; k++) {
                if (h[i + k] != needle[k]) continue outer;
            }
            return i;
        }
        throw new AssertionError("not found");
    }

    private static long usedAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    private static FastHeaderJson.Parsed fast(String json) {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        return FastHeaderJson.parse(b, b.length, Long.MAX_VALUE);
    }

    private static boolean assertAgree(String json) {
        return assertAgree(json.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Returns whether the byte reader answered. The full path's answer is the full parser's
     * entries, each through the extent check both paths share; where it refuses, the byte
     * reader must have stood aside.
     */
    private static boolean assertAgree(byte[] b) {
        return assertAgree(b, Long.MAX_VALUE);
    }

    private static boolean assertAgree(byte[] b, long dataBytes) {
        FastHeaderJson.Parsed fast = FastHeaderJson.parse(b, b.length, dataBytes);
        HeaderJson.Parsed full;
        try {
            full = new HeaderJson(Path.of("h"), SafetensorsParser.DEFAULT_MAX_HEADER_BYTES).parse(b, b.length);
        } catch (SafetensorsFormatException e) {
            if (fast != null && e.getMessage().contains("appears twice in the header")) {
                // left to the header built from the answer (aNameGivenTwiceIsReportedAsTheFullParserReportsIt)
                long names = fast.tensors().stream().map(TensorInfo::name).distinct().count();
                assertTrue(names < fast.tensors().size(), "the repeat is in the byte reader's answer: " + e.getMessage());
                return false;
            }
            if (fast != null) {
                fail("the byte reader accepted what the full parser refuses (" + e.getMessage() + "): "
                        + new String(b, StandardCharsets.UTF_8));
            }
            return false;
        }
        String what = new String(b, StandardCharsets.UTF_8);
        List<TensorInfo> checked = new ArrayList<>();
        for (HeaderJson.Entry e : full.entries()) {
            TensorInfo t = DataLayout.checked(e.name(), e.dtype(), e.shape(), e.begin(), e.end(), dataBytes);
            if (t == null) {
                assertNull(fast, "the byte reader accepted a tensor whose extent is wrong: " + what);
                return false;
            }
            checked.add(t);
        }
        if (fast == null) {
            return false;
        }
        assertEquals(full.metadata(), fast.metadata(), what);
        assertEquals(checked, fast.tensors(), what); // TensorInfo.equals: name, dtype, shape, offsets
        for (int i = 0; i < checked.size(); i++) {
            assertEquals(checked.get(i).numel(), fast.tensors().get(i).numel(), what);
        }
        return true;
    }

    /** A tensor whose extent is wrong for its shape, or past the data section, is the full path's to name. */
    @Test
    void theByteReaderLeavesAWrongExtentToTheFullPath() throws IOException {
        String ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
        byte[] okBytes = ok.getBytes(StandardCharsets.UTF_8);
        assertNotNull(FastHeaderJson.parse(okBytes, okBytes.length, 8));
        assertNull(FastHeaderJson.parse(okBytes, okBytes.length, 7), "an extent past the data section");
        for (String[] c : new String[][] {
                {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,7]}}", "needs 8 bytes, but data_offsets [0, 7] span 7"},
                {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "are reversed"},
                {"{\"a\":{\"dtype\":\"F32\",\"shape\":[100000000000000000,1000],\"data_offsets\":[0,8]}}",
                        "the size overflows 64 bits"}}) {
            String wrong = c[0];
            byte[] h = wrong.getBytes(StandardCharsets.UTF_8);
            assertNull(FastHeaderJson.parse(h, h.length, Long.MAX_VALUE), wrong);
            assertAgree(h);
            // and the file's parse names it as the full path does
            Path f = TestFiles.write(dir.resolve("wrong.safetensors"), TestFiles.withHeader(wrong, 8));
            String got = assertThrows(SafetensorsFormatException.class, () -> SafetensorsParser.standard().parse(f)).getMessage();
            assertTrue(got.contains("tensor 'a': ") && got.contains(c[1]), got);
        }
    }
}
