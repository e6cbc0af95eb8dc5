package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The messages for a header that is wrong in itself: each names the file, the field or tensor
 * and what is wrong in words a user can act on, and never shows an invisible character or a
 * parser's internals.
 */
class HeaderErrorsTest {
    private static final String A = MalformedCorpus.A;

    @TempDir
    Path dir;

    private SafetensorsFormatException refused(Path f) {
        return assertThrows(SafetensorsFormatException.class, () -> SafetensorsParser.standard().parse(f));
    }

    @Test
    void randomBytesAreNotASafetensorsFile() throws IOException {
        // seeds whose first bytes look like no other kind of file (FileKind says nothing)
        for (int size : new int[] {8, 9, 100, 4096, 1 << 20}) {
            byte[] b = TestFiles.pattern(size, 42 + size);
            Path f = TestFiles.write(dir.resolve("random-" + size + ".safetensors"), b);
            long n = java.nio.ByteBuffer.wrap(b, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
            SafetensorsFormatException e = refused(f);
            assertEquals("header length", e.subject(), e.getMessage());
            assertEquals(f + ": header length: 0x" + Long.toHexString(n) + " (" + Long.toUnsignedString(n)
                    + " bytes) is larger than the file (" + size + " bytes): not a safetensors file (its first 8 bytes"
                    + " must be the little-endian length of the JSON header that follows them)", e.getMessage());
        }
    }

    @Test
    void aLengthThatFitsTheLimitButNotTheFileSaysTruncated() throws IOException {
        byte[] h = ("{" + A + "}").getBytes(StandardCharsets.UTF_8);
        Path f = TestFiles.write(dir.resolve("cut.safetensors"), TestFiles.raw(h.length + 100, h, new byte[8]));
        long size = 8 + h.length + 8;
        assertEquals(f + ": header length: 0x" + Long.toHexString(h.length + 100) + " (" + (h.length + 100)
                + " bytes) is larger than the file (" + size + " bytes): the file is truncated, or it is not a"
                + " safetensors file", refused(f).getMessage());
    }

    @Test
    void aLengthWithinTheFileButOverTheLimitSaysTheLimit() throws IOException {
        Path f = TestFiles.write(dir.resolve("big.safetensors"), TestFiles.withHeader("{" + A + "}", 8));
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class,
                () -> new SafetensorsParser(16).parse(f));
        assertEquals(f + ": header length: " + ("{" + A + "}").length() + " bytes exceeds the limit of 16 bytes",
                e.getMessage());
    }

    @Test
    void aHeaderTooShortForAnObjectSaysSo() throws IOException {
        Path zero = TestFiles.write(dir.resolve("zero.safetensors"), TestFiles.raw(0, new byte[0], new byte[4]));
        assertEquals(zero + ": header length: 0 bytes is too short: the header is a JSON object, at least 2 bytes"
                + " ('{}')", refused(zero).getMessage());
        Path one = TestFiles.write(dir.resolve("one.safetensors"), TestFiles.raw(1, new byte[] {'{'}, new byte[0]));
        assertEquals(one + ": header length: 1 byte is too short: the header is a JSON object, at least 2 bytes ('{}')",
                refused(one).getMessage());
        // the shortest header there is loads: no tensor, no data
        Path empty = TestFiles.write(dir.resolve("empty-object.safetensors"), TestFiles.withHeader("{}", 0));
        assertEquals(0, SafetensorsParser.standard().parse(empty).tensors().size());
    }

    @Test
    void aByteOrderMarkIsRefusedInWordsNeverShownRaw() throws IOException {
        // the same header as a valid file, after EF BB BF: the reference implementation
        // (serde_json) refuses it, and so does this parser
        Path f = TestFiles.write(dir.resolve("bom.safetensors"), TestFiles.withHeader("\uFEFF{" + A + "}", 8));
        SafetensorsFormatException e = refused(f);
        assertEquals(f + ": header: starts with a UTF-8 byte order mark (bytes EF BB BF at byte 8); a safetensors"
                + " header must begin with '{': write the file again without the byte order mark", e.getMessage());
        assertEquals("header", e.subject());
        // a BOM in the middle of a header: Jackson's own message, with the character escaped
        Path twice = TestFiles.write(dir.resolve("bom-inside.safetensors"),
                TestFiles.withHeader("{\uFEFF" + A + "}", 8));
        String m = refused(twice).getMessage();
        assertTrue(m.contains("header is not valid JSON") && m.contains("\\ufeff"), m);
        assertFalse(m.contains("\uFEFF"), "the raw byte order mark is shown: " + m);
    }

    @Test
    void jsonTextWithAByteOrderMarkSaysJsonAndTheMarkInWords() throws IOException {
        Path f = TestFiles.write(dir.resolve("config.safetensors"),
                "\uFEFF{\"model_type\": \"gpt2\"}".getBytes(StandardCharsets.UTF_8));
        String m = refused(f).getMessage();
        assertEquals(f + ": not a safetensors file: it is JSON text, starting \"{\"model_type\": \"gpt2\"}\" (after a"
                + " UTF-8 byte order mark)", m);
    }

    @Test
    void invalidUtf8NamesTheByteAndWhereItIs() throws IOException {
        byte[] h = ("{" + A + "}").getBytes(StandardCharsets.UTF_8);
        h[2] = (byte) 0xff; // in the name "a"
        Path f = TestFiles.write(dir.resolve("latin1.safetensors"), TestFiles.raw(h.length, h, new byte[8]));
        assertEquals(f + ": header is not valid UTF-8 (byte 0xff at byte 10)", refused(f).getMessage());
    }

    @Test
    void jsonErrorsLeaveOutJacksonsSourceDescription() throws IOException {
        // an array left open: Jackson points at where it started, inside a "[Source: ...]"
        Path f = TestFiles.write(dir.resolve("cut-json.safetensors"),
                TestFiles.withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[2", 8));
        String m = refused(f).getMessage();
        assertTrue(m.startsWith(f + ": header is not valid JSON: "), m);
        assertFalse(m.contains("Source:") || m.contains("REDACTED") || m.contains("StreamReadFeature"), m);
        // the '[' is byte 28 of the header, byte 36 of the file
        assertTrue(m.contains("expected close marker for Array (start marker at byte 36)"), "the position stays: " + m);
        // on a later line, the same
        Path lines = TestFiles.write(dir.resolve("cut-json-lines.safetensors"),
                TestFiles.withHeader("{\n \"a\": {\"dtype\": \"F32\",\n  \"shape\": [2", 8));
        m = refused(lines).getMessage();
        assertTrue(m.contains("(start marker at byte " + (8 + "{\n \"a\": {\"dtype\": \"F32\",\n  \"shape\": ".length())
                + ")"), m);
    }

    @Test
    void layoutErrorsNameTheTensorAndTheField() throws IOException {
        String b = "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]}";
        Path outside = TestFiles.write(dir.resolve("outside.safetensors"),
                TestFiles.withHeader("{" + A.replace("[0,8]", "[0,80]").replace("[2]", "[20]") + "}", 8));
        assertEquals(outside + ": tensor 'a': data_offsets [0, 80] lie outside the file: its data section has 8 bytes",
                refused(outside).getMessage());
        Path overlap = TestFiles.write(dir.resolve("overlap.safetensors"),
                TestFiles.withHeader("{" + A + "," + b.replace("[8,12]", "[4,8]") + "}", 8));
        assertEquals(overlap + ": tensor 'b': data_offsets [4, 8) overlap tensor 'a' at [0, 8)",
                refused(overlap).getMessage());
        Path extent = TestFiles.write(dir.resolve("extent.safetensors"),
                TestFiles.withHeader("{" + A.replace("[2]", "[3]") + "}", 8));
        assertEquals(extent + ": tensor 'a': shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] span 8",
                refused(extent).getMessage());
        Path trailing = TestFiles.write(dir.resolve("trailing.safetensors"),
                TestFiles.withHeader("{" + A + "," + b + "}", 16));
        assertEquals(trailing + ": 4 trailing bytes after the last tensor, 'b' (tensors end at data offset 12, the data"
                + " section has 16 bytes)", refused(trailing).getMessage());
        Path none = TestFiles.write(dir.resolve("none.safetensors"), TestFiles.withHeader("{}", 3));
        assertEquals(none + ": 3 trailing bytes: the header lists no tensor, but the data section has 3 bytes",
                refused(none).getMessage());
    }

    @Test
    void invisibleCharactersInNamesAreEscaped() throws IOException {
        // a right-to-left override would make a terminal show the rest of the line reversed
        Path f = TestFiles.write(dir.resolve("rtl.safetensors"),
                TestFiles.withHeader("{\"x\u202Ey\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4));
        String m = refused(f).getMessage();
        assertTrue(m.contains("tensor 'x\\u202ey'"), m);
        assertFalse(m.contains("\u202E"), m);
    }
}
