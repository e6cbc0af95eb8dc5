package io.phxfs.cli;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A valid file whose header needs more heap than the JVM has (within the format's 100 MB, a
 * header lists up to 1.7 million tensors): one line that says so and how to give more, exit
 * status 1, not an OutOfMemoryError's stack trace.
 */
class OutOfMemoryTest {
    @TempDir
    Path dir;

    @Test
    void aHeaderLargerThanTheHeapIsOneLineAndExitOne() throws IOException, InterruptedException {
        int n = 150_000;
        StringBuilder json = new StringBuilder(n * 56).append('{');
        for (int i = 0; i < n; i++) {
            json.append(i == 0 ? "" : ",").append("\"t").append(i)
                    .append("\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[").append(i).append(',')
                    .append(i + 1).append("]}");
        }
        byte[] h = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
        Path f = dir.resolve("many.safetensors");
        Files.write(f, ByteBuffer.allocate(8 + h.length + n).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).put(h)
                .array());

        // a small heap, and a collector and compiler that give up on it quickly
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx24m",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "io.phxfs.cli.PhoenixCli", "load", "--host", f.toString());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(dir.resolve("out").toFile())
                .redirectError(dir.resolve("err").toFile());
        pb.environment().put("PHX_CONNECTOR", "fake");
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the CLI did not finish");
        String err = Files.readString(dir.resolve("err"));
        assertEquals(1, p.exitValue(), err);
        assertTrue(err.startsWith("phoenix: out of Java memory (Java heap space; the heap limit is "), err);
        assertTrue(err.contains("JAVA_TOOL_OPTIONS=-Xmx"), err);
        assertEquals(1, err.lines().count(), "one line: " + err);
        assertTrue(!err.contains(File.separator + "java.lang.") && !err.contains("\tat "), err);
    }
}
