package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** One size grammar for every size option: what it accepts, and junk refused with a reason. */
class SizesTest {
    @TempDir
    java.nio.file.Path dir;

    @ParameterizedTest
    @CsvSource({"4096,4096", "512B,512", "4k,4096", "4K,4096", "4KiB,4096", "4kib,4096", "64m,67108864",
            "64MiB,67108864", "1g,1073741824", "1GiB,1073741824", "2t,2199023255552", " 8m ,8388608"})
    void accepts(String text, long bytes) {
        assertEquals(bytes, Sizes.parse(text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "k", "1bk", "1kk", "1.5g", "-4k", "0", "0k", "4 k", "4KiBB", "4x", "1e6", "0x10",
            "99999999999999999999", "9000000t"})
    void refusesJunk(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sizes.parse(text));
        assertTrue(e.getMessage().contains("size"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"4KB", "4kb", "64MB", "1GB"})
    void decimalLookingUnitsAreRefusedAsAmbiguous(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sizes.parse(text));
        assertTrue(e.getMessage().contains("ambiguous") && e.getMessage().contains("iB"), e.getMessage());
    }

    @Test
    void everySizeOptionUsesTheConverter() {
        String d = dir.toString();
        String m = dir.resolve("m").toString();
        for (String[] args : new String[][] {
                {"--size", "bench", "--size", "1bk", "--dir", d},
                {"--sizes", "bench", "--sizes", "4k,1bk", "--dir", d},
                {"--sweep-bytes", "bench", "--sweep-bytes", "1bk", "--dir", d},
                {"--size", "gen-model", m, "--size", "1bk"}}) {
            Cli r = Cli.run(java.util.Arrays.copyOfRange(args, 1, args.length));
            assertEquals(2, r.exit(), r.toString());
            assertTrue(r.err().startsWith("Invalid value for option '" + args[0] + "'") && r.err().contains("'1bk'"),
                    r.toString());
        }
    }
}
