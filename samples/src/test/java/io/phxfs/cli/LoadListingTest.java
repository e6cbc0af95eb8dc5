package io.phxfs.cli;

import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.TestFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code phoenix load}'s text listing of tensors whose names came from another writer: a header
 * name is any JSON string, with newlines, terminal escape sequences or bidirectional overrides.
 */
class LoadListingTest {
    @TempDir
    Path dir;

    @Test
    void namesWithControlAndFormatCharactersStayOnTheirRow() throws IOException {
        String newline = "layer\n0.weight";
        String escape = "\u001b[2J\u001b[31mred";
        String bidi = "abc\u202edef";
        Path f = TestFiles.valid(dir.resolve("odd-names.safetensors"), Map.of(),
                List.of(TestFiles.spec(newline, Dtype.U8, 2), TestFiles.spec(escape, Dtype.F16, 3),
                        TestFiles.spec(bidi, Dtype.I32), TestFiles.spec("plain", Dtype.U8, 1)));
        Cli r = Cli.run("load", f.toString(), "--host");
        assertEquals(0, r.exit(), r.toString());
        List<String> lines = r.out().lines().toList();
        assertEquals(5, lines.size(), "a summary and one row per tensor: " + r.out());
        assertFalse(r.out().contains("\u001b"), "no escape sequence reaches the terminal: " + r.out());
        assertFalse(r.out().contains("\u202e"), "no bidirectional override: " + r.out());
        assertTrue(r.out().contains("layer\\u000a0.weight"), r.out());
        assertTrue(r.out().contains("\\u001b[2J\\u001b[31mred"), r.out());
        assertTrue(r.out().contains("abc\\u202edef"), r.out());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("  plain ")), r.out());

        // JSON carries the names as they are (its own escaping keeps them on one line)
        Cli j = Cli.run("load", f.toString(), "--host", "--json");
        assertEquals(0, j.exit(), j.toString());
        assertTrue(j.json().path("tensors").has(newline), j.out());
        assertTrue(j.json().path("tensors").has(escape), j.out());
        assertTrue(j.json().path("tensors").has(bidi), j.out());
    }
}
