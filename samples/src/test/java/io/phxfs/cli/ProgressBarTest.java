package io.phxfs.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bar stays silent for short work and draws, then ends its line, for long work. */
class ProgressBarTest {
    @Test
    void shortWorkPrintsNothing() {
        StringWriter s = new StringWriter();
        try (ProgressBar bar = new ProgressBar(new PrintWriter(s), "loading", 1000, true)) {
            bar.onProgress(0, 100);
            bar.onProgress(100, 100);
        }
        assertEquals("", s.toString());
    }

    @Test
    void longWorkDrawsUntilDone() throws InterruptedException {
        StringWriter s = new StringWriter();
        ProgressBar bar = new ProgressBar(new PrintWriter(s), "loading", 20, true);
        bar.onProgress(0, 2_000_000_000L);
        awaitOutput(s, "  0%");
        bar.onProgress(1_000_000_000L, 2_000_000_000L);
        awaitOutput(s, " 50%");
        bar.onProgress(2_000_000_000L, 2_000_000_000L);
        bar.close();
        String out = s.toString();
        assertTrue(bar.wasDrawn());
        assertTrue(out.startsWith("\rloading ["), out);
        assertTrue(out.contains(" 50%"), out);
        String last = out.substring(out.lastIndexOf('\r'));
        assertTrue(last.contains("100%") && last.contains("2.00 / 2.00 GB"), last);
        assertTrue(out.endsWith("GB/s" + System.lineSeparator()), out);
        assertEquals(1, out.split("\n", -1).length - 1, "one line ending: " + out);
    }

    @Test
    void beforeTheReadItSaysMemoryIsBeingAllocated() throws InterruptedException {
        StringWriter s = new StringWriter();
        try (ProgressBar bar = new ProgressBar(new PrintWriter(s), "loading", 20, true)) {
            awaitOutput(s, "allocating memory");
            assertTrue(!s.toString().contains("0.00 / 0.00 GB"), s.toString());
            bar.onProgress(5, 10);
            awaitOutput(s, " 50%");
        }
    }

    @Test
    void withoutATerminalItWritesWholeLinesAndNoCarriageReturns() throws InterruptedException {
        StringWriter s = new StringWriter();
        ProgressBar bar = new ProgressBar(new PrintWriter(s), "loading", 20, false);
        bar.onProgress(0, 2_000_000_000L);
        awaitOutput(s, "  0%");
        bar.onProgress(1_000_000_000L, 2_000_000_000L);
        Thread.sleep(600); // three frames at a terminal's rate: none of them may be written here
        bar.onProgress(2_000_000_000L, 2_000_000_000L);
        bar.close();
        String out = s.toString();
        assertTrue(!out.contains("\r"), "a carriage return outside a terminal: " + out);
        String[] lines = out.split(System.lineSeparator());
        assertEquals(2, lines.length, "the first line and the last, nothing between: " + out);
        assertTrue(lines[0].startsWith("loading [") && lines[0].contains("  0%"), out);
        assertTrue(lines[1].contains("100%") && lines[1].contains("2.00 / 2.00 GB"), out);
        assertTrue(out.endsWith(System.lineSeparator()), out);
    }

    /** Waits (up to 10 s, for slow machines) until the painter has drawn {@code text}. */
    private static void awaitOutput(StringWriter s, String text) throws InterruptedException {
        for (int i = 0; i < 1000 && !s.toString().contains(text); i++) {
            Thread.sleep(10);
        }
        assertTrue(s.toString().contains(text), "never drew '" + text + "': " + s);
    }
}
