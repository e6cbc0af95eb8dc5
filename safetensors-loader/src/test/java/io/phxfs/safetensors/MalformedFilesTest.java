package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every file of the malformed corpus is refused with a one-line message naming file and problem. */
class MalformedFilesTest {
    private static Path dir;
    private static List<MalformedCorpus.Case> cases;

    @BeforeAll
    static void generate() throws IOException {
        dir = java.nio.file.Files.createTempDirectory("phx-malformed");
        cases = MalformedCorpus.generate(dir);
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TempDirs.delete(dir);
    }

    static List<MalformedCorpus.Case> cases() {
        return cases;
    }

    @Test
    void corpusIsLargeEnough() {
        assertTrue(cases.size() >= 30, "only " + cases.size() + " malformed cases");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void refusedWithAClearMessage(MalformedCorpus.Case c) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(c.input()),
                c.name() + " was accepted");
        if (c.format()) {
            SafetensorsFormatException f = assertInstanceOf(SafetensorsFormatException.class, e, e.toString());
            assertEquals(c.blamed(), f.file(), "blamed file; message: " + e.getMessage());
        }
        String m = e.getMessage();
        assertTrue(m.contains(c.blamed().toString()), "message does not name " + c.blamed() + ": " + m);
        assertTrue(m.contains(c.expected()), "message lacks '" + c.expected() + "': " + m);
        assertFalse(m.contains("\n") || m.contains("\r"), "message is not one line: " + m);
        assertTrue(m.length() < 1000, "message of " + m.length() + " chars");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void loaderRefusesToo(MalformedCorpus.Case c) {
        WeightLoader loader = WeightLoader.builder().toHost().build();
        assertThrows(IllegalArgumentException.class, () -> loader.load(c.input()).close());
    }

    @Test
    void smallerHeaderLimitApplies() throws IOException {
        Path f = TestFiles.write(dir.resolve("limit.safetensors"),
                TestFiles.withHeader("{" + MalformedCorpus.A + "}", 8));
        assertEquals(1, new SafetensorsParser(1000).parse(f).tensors().size());
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class,
                () -> new SafetensorsParser(16).parse(f));
        assertEquals("header length", e.subject());
        assertTrue(e.problem().contains("exceeds the limit of 16 bytes"), e.problem());
    }
}
