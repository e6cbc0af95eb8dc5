package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.core.Phoenix;
import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.TestFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a user sees for the mistakes a review found said badly or not at all: a file of random
 * bytes, a header with a byte order mark, options that contradict each other, sizes in raw
 * bytes, and throughput figures of models too small to have one.
 */
class UserErrorsTest {
    @TempDir
    Path dir;

    private static final String[] SMALL = {"--hidden", "256", "--intermediate", "512", "--vocab", "1000", "--heads", "4",
            "--kv-heads", "2"};

    private static String[] with(String[] a, String... b) {
        String[] r = new String[a.length + b.length];
        System.arraycopy(a, 0, r, 0, a.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    @Test
    void randomBytesSayNotASafetensorsFile() throws IOException {
        byte[] b = TestFiles.pattern(4096, 7);
        Path f = TestFiles.write(dir.resolve("random.safetensors"), b);
        long n = ByteBuffer.wrap(b, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        Cli r = Cli.run("load", f.toString(), "--host");
        assertEquals(2, r.exit(), r.toString());
        assertEquals("", r.out());
        assertEquals(List.of("phoenix: error: " + f + ": header length: 0x" + Long.toHexString(n) + " ("
                + Long.toUnsignedString(n) + " bytes) is larger than the file (4096 bytes): not a safetensors file (its"
                + " first 8 bytes must be the little-endian length of the JSON header that follows them)"),
                r.err().lines().toList());
    }

    @Test
    void aByteOrderMarkIsNamedNotShown() throws IOException {
        Path f = TestFiles.write(dir.resolve("bom.safetensors"),
                TestFiles.withHeader("\uFEFF{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4));
        Cli r = Cli.run("load", f.toString(), "--host");
        assertEquals(2, r.exit(), r.toString());
        assertEquals(List.of("phoenix: error: " + f + ": header: starts with a UTF-8 byte order mark (bytes EF BB BF at"
                + " byte 8); a safetensors header must begin with '{': write the file again without the byte order mark"),
                r.err().lines().toList());
        assertFalse(r.err().contains("\uFEFF"), r.err());
    }

    /**
     * A usage error: the message and where the options are explained, exit status 2, nothing on
     * stdout; not the whole usage, which pushed the message off a small terminal.
     */
    private static void assertUsageError(String expectedFirstLine, String... args) {
        Cli r = Cli.run(args);
        String what = String.join(" ", args) + ": " + r;
        assertEquals(2, r.exit(), what);
        assertEquals("", r.out(), what);
        List<String> lines = r.err().lines().toList();
        assertEquals(List.of(expectedFirstLine, "Try 'phoenix " + args[0] + " --help' for the options."), lines, what);
    }

    @Test
    void contradictoryLoadOptionsAreUsageErrors() {
        String llama = Fixtures.file("tiny-llama").toString();
        assertUsageError("Error: --copy and --device=N are mutually exclusive: --copy makes host tensors writable, and"
                + " device tensors are always writable copies", "load", llama, "--device", "0", "--copy");
        assertUsageError("Error: --copy and --devices are mutually exclusive: --copy makes host tensors writable, and"
                + " device tensors are always writable copies", "load", llama, "--devices", "0", "--copy");
        assertUsageError("Error: --spread needs --devices (it says how a model goes onto several devices)",
                "load", llama, "--spread", "split");
        assertUsageError("Error: --spread needs --devices (it says how a model goes onto several devices)",
                "load", llama, "--host", "--spread", "replicate");
        assertUsageError("Error: --devices and --host are mutually exclusive (specify only one)",
                "load", llama, "--devices", "0", "--host");
        assertUsageError("Error: --devices and --device=N are mutually exclusive (specify only one)",
                "load", llama, "--devices", "0", "--device", "0");
        assertUsageError("Error: Invalid value for option '--spread': expected one of [replicate, split] but was"
                + " 'diagonal'", "load", llama, "--devices", "0", "--spread", "diagonal");
        assertUsageError("Error: --direct and --buffered are mutually exclusive (specify only one)",
                "load", llama, "--host", "--direct", "--buffered");
        assertUsageError("Error: --repeat must be >= 1, was 0", "load-bench", llama, "--repeat", "0");

        // what stays allowed
        Cli copy = Cli.run("load", llama, "--host", "--copy", "--json");
        assertEquals(0, copy.exit(), copy.toString());
        assertTrue(copy.json().path("writable").asBoolean(), copy.out());
        Cli spread = Cli.run("load", llama, "--devices", "0", "--spread", "split", "--json");
        assertEquals(0, spread.exit(), spread.toString());
        // --copy with no target: host memory where there is no accelerator; on device 0 it is refused
        Cli unstated = Cli.run("load", llama, "--copy", "--json");
        if (Phoenix.open().device(0).isHostMemory()) {
            assertEquals(0, unstated.exit(), unstated.toString());
            assertEquals("host", unstated.json().path("mode").asText(), unstated.out());
            assertTrue(unstated.json().path("writable").asBoolean(), unstated.out());
        } else {
            assertEquals(2, unstated.exit(), unstated.toString());
            assertEquals("Error: --copy applies to host loads, and the target is device 0 (the default where there is"
                    + " an accelerator): add --host for writable host tensors", unstated.err().lines().findFirst()
                    .orElseThrow(), unstated.toString());
        }
    }

    @Test
    void genModelSaysSizesInUnits() {
        Cli small = Cli.run(with(new String[] {"gen-model", dir.resolve("x").toString(), "--size", "1k"}, SMALL));
        assertEquals(2, small.exit(), small.toString());
        // 2 x 1000 x 256 bf16 + 256 = 1,024,512 bytes
        assertEquals(List.of("phoenix: error: --size 1.00 KiB is smaller than the embeddings and LM head alone"
                + " (1000.50 KiB) at --hidden 256 --intermediate 512 --vocab 1000: use --size 3MiB or more (one layer),"
                + " or smaller dimensions, e.g. --hidden 64 --intermediate 64 --vocab 256 --heads 1 --kv-heads 1"),
                small.err().lines().toList());

        Path m = dir.resolve("m");
        Cli r = Cli.run(with(new String[] {"gen-model", m.toString(), "--size", "2560k", "--shards", "2"}, SMALL));
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().matches("(?s)" + java.util.regex.Pattern.quote(m.toString())
                + ": 1 layer, 12 tensors, \\d+\\.\\d\\d (KiB|MiB) of weights \\(--size 2\\.50 MiB\\) in 2 file\\(s\\),"
                + " \\d+\\.\\d\\d (KiB|MiB) on disk\n"), r.out());
        assertFalse(r.out().contains("bytes"), "no raw byte counts: " + r.out());
        assertTrue(r.err().lines().allMatch(l -> l.matches("phoenix gen-model: wrote .*model-0000[12]-of-00002"
                + "\\.safetensors \\(\\d+ tensors, \\d+\\.\\d\\d (KiB|MiB)\\)")), r.err());
    }

    @Test
    void loadBenchWarnsThatASmallModelHasNoMeaningfulThroughput() {
        Path m = dir.resolve("small");
        Cli g = Cli.run(with(new String[] {"gen-model", m.toString(), "--size", "3m"}, SMALL));
        assertEquals(0, g.exit(), g.toString());
        assertEquals(m + ": 1 layer, 12 tensors, 2.10 MiB of weights (--size 3.00 MiB) in 1 file(s), 2.10 MiB on disk\n",
                g.out());
        Cli r = Cli.run("load-bench", m.toString(), "--host", "--repeat", "1", "--json", "--quiet", "--no-dd");
        assertEquals(0, r.exit(), r.toString());
        List<String> err = r.err().lines().toList();
        assertEquals(1, err.size(), "the warning, even with --quiet: " + r.err());
        assertTrue(err.get(0).matches("phoenix: load-bench: warning: 2\\.\\d\\d MiB is too small to measure throughput"
                + " \\(under 64 MiB\\): fixed costs dominate, so the rates and ratios are not meaningful; use a model"
                + " of 64 MiB or more"), err.get(0));
        JsonNode j = r.json();
        assertFalse(j.path("reliable").asBoolean(true), r.out());
        assertTrue(j.path("unreliable_because").asText().contains("64 MiB"), r.out());
        Cli text = Cli.run("load-bench", m.toString(), "--host", "--repeat", "1", "--quiet", "--no-dd");
        assertTrue(text.out().contains("UNRELIABLE: the model is under 64 MiB"), text.out());

        // 64 MiB and more: no warning
        Path big = dir.resolve("big");
        assertEquals(0, Cli.run(with(new String[] {"gen-model", big.toString(), "--size", "72m"}, SMALL)).exit());
        Cli b = Cli.run("load-bench", big.toString(), "--host", "--repeat", "1", "--json", "--quiet", "--no-dd");
        assertEquals(0, b.exit(), b.toString());
        assertTrue(b.json().path("bytes").asLong() >= 64L << 20, b.out());
        assertEquals("", b.err());
        assertTrue(b.json().path("reliable").asBoolean(), b.out());
        assertTrue(b.json().path("unreliable_because").isMissingNode(), b.out());
    }
}
