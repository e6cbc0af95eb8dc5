package io.phxfs.safetensors;

import io.phxfs.core.OpenMode;
import io.phxfs.core.PhxFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A load whose reads start before the parse (one device, or a host copy) and whose header then
 * turns out malformed: the error must come without reading the rest of the file first, which
 * for a real checkpoint takes minutes and, into host memory, as much memory as the file.
 */
class AbandonedReadsTest {
    @TempDir
    Path dir;

    @Test
    void aMalformedHeaderStopsTheReadsThatStartedBeforeIt() throws IOException {
        long n = 4L << 30;
        // a dtype of another format (GGUF's): the length and size are plausible, so the reads start
        Path f = dir.resolve("big.safetensors");
        byte[] h = ("{\"w\":{\"dtype\":\"Q4_K\",\"shape\":[" + n + "],\"data_offsets\":[0," + n + "]}}")
                .getBytes(StandardCharsets.UTF_8);
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(8 + h.length).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).put(h).flip());
            ch.write(ByteBuffer.wrap(new byte[1]), 8 + h.length + n - 1); // sparse: no disk, no time to write
        }
        // through the page cache, so that what was read can be told afterwards from what is cached
        WeightLoader loader = WeightLoader.builder().toHost().writable(true).direct(false).build();
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class, () -> loader.load(f));
        assertTrue(e.getMessage().contains("unknown dtype 'Q4_K'"), e.getMessage());
        double cached;
        try (PhxFile file = PhxFile.open(f, OpenMode.READ)) {
            cached = file.cachedFraction();
        }
        // the reads under way when the parse failed finish; those not started are cancelled
        assertTrue(cached < 0.5, "the whole file was read before the error: " + cached + " of it is cached");
    }
}
