package io.phxfs.examples;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.LoadedModel;
import io.phxfs.safetensors.WeightLoader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The programs the README shows: each one's main runs on real files, the memory it filled is
 * compared with the files, and the README's code blocks must be these sources, byte for byte.
 */
class ExamplesTest {
    private static final Path SOURCES = Path.of("src/main/java/io/phxfs/examples");
    private static final Path README = Path.of("../README.md");

    @TempDir
    Path dir;

    private Path file(String name, int size, long seed) throws IOException {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        return Files.write(dir.resolve(name), data);
    }

    /** What {@code main} printed to System.out. */
    private interface Main {
        void run() throws Exception;
    }

    private static String stdout(Main main) throws Exception {
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            main.run();
        } finally {
            System.setOut(saved);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** The buffer's bytes, copied out whether it is device or host memory. */
    private static byte[] contents(RegisteredBuffer buf) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(buf.size());
            if (buf.isHost()) {
                MemorySegment.copy(buf.segment().orElseThrow(), 0, dst, 0, buf.size());
            } else {
                Phoenix.open().device(buf.deviceId()).copyToHost(buf, 0, dst);
            }
            return dst.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void readFileIntoDeviceAndHost() throws Exception {
        // odd sized, so that no request size or alignment hides a missing tail
        Path p = file("weights.bin", 3 * (1 << 20) + 4097, 1);
        byte[] expected = Files.readAllBytes(p);
        for (boolean host : new boolean[] {false, true}) {
            try (RegisteredBuffer buf = ReadFile.read(p, host)) {
                assertEquals(host ? -1 : 0, buf.deviceId(), buf.toString());
                assertArrayEquals(expected, contents(buf), host ? "host" : "device 0");
            }
        }
        assertEquals("read " + expected.length + " bytes into device 0\n",
                stdout(() -> ReadFile.main(new String[] {p.toString()})));
        assertEquals("read " + expected.length + " bytes into host memory\n",
                stdout(() -> ReadFile.main(new String[] {p.toString(), "--host"})));
    }

    @Test
    void readFilesConcatenatesThemInOneBatch() throws Exception {
        List<Path> paths = new ArrayList<>();
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        // more files than the batch's initial capacity, so that it has to grow
        for (int i = 0; i < 40; i++) {
            Path p = file("shard-" + i + ".bin", 1000 + 777 * i, 10 + i);
            paths.add(p);
            expected.write(Files.readAllBytes(p));
        }
        Device dev = Phoenix.open().device(0);
        try (RegisteredBuffer buf = ReadFiles.read(dev, paths)) {
            assertArrayEquals(expected.toByteArray(), contents(buf));
        }
        String[] args = paths.stream().map(Path::toString).toArray(String[]::new);
        assertEquals("read 40 files, " + expected.size() + " bytes, into device 0\n",
                stdout(() -> ReadFiles.main(args)));
    }

    @Test
    void loadWeightsPrintsTheSelectedTensors() throws Exception {
        Path model = Fixtures.file("tiny-gpt2/model.safetensors");
        String regex = "^transformer\\.h\\.0\\.";
        TreeSet<String> expected = new TreeSet<>();
        try (LoadedModel m = WeightLoader.builder().toHost().build().load(model)) {
            for (String name : m.tensors().keySet()) {
                if (Pattern.compile(regex).matcher(name).find()) {
                    expected.add(name);
                }
            }
        }
        assertFalse(expected.isEmpty(), "the fixture has tensors matching " + regex);
        String out = stdout(() -> LoadWeights.main(new String[] {model.toString(), regex}));
        TreeSet<String> printed = new TreeSet<>();
        for (String line : out.split("\n")) {
            assertTrue(line.matches("\\S+ \\w+ \\d+ bytes at 0x[0-9a-f]+"), line);
            printed.add(line.substring(0, line.indexOf(' ')));
        }
        assertEquals(expected, printed);
    }

    @Test
    void kvCacheStoresLooksUpAndRetrieves() throws Exception {
        String out = stdout(() -> KvCache.main(new String[] {dir.resolve("kv").toString()}));
        assertTrue(out.startsWith("stored 512, held 512, retrieved 512 tokens, bytes equal\n"), out);
        try (var files = Files.list(dir.resolve("kv"))) {
            assertEquals(2, files.filter(f -> f.toString().endsWith(".kv")).count(), "two chunk files on disk");
        }
    }

    /**
     * Every Java block in the README is preceded by an HTML comment naming an example source
     * and equals that file, so the README can only show code that CI compiles and runs.
     */
    @Test
    void readmeShowsExactlyTheseSources() throws IOException {
        String readme = Files.readString(README);
        Matcher block = Pattern.compile("(?m)^```java\\n(.*?)^```$", Pattern.DOTALL).matcher(readme);
        Pattern marker = Pattern.compile("<!-- (samples/src/main/java/io/phxfs/examples/\\w+\\.java) -->\\n+$");
        TreeSet<String> shown = new TreeSet<>();
        while (block.find()) {
            Matcher m = marker.matcher(readme.substring(Math.max(0, block.start() - 200), block.start()));
            assertTrue(m.find(), "README.md: a ```java block without a <!-- samples/src/main/java/io/phxfs/examples/X.java -->"
                    + " line before it, at offset " + block.start() + ":\n" + block.group(1));
            Path source = Path.of("..").resolve(m.group(1));
            assertEquals(Files.readString(source), block.group(1), "README.md's copy of " + m.group(1)
                    + " differs from the file; paste the file into the README");
            shown.add(source.getFileName().toString());
        }
        TreeSet<String> all = new TreeSet<>();
        try (var files = Files.list(SOURCES)) {
            files.forEach(f -> all.add(f.getFileName().toString()));
        }
        assertEquals(all, shown, "every example is shown in the README, and only examples");
    }
}
