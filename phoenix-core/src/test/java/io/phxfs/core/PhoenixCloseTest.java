package io.phxfs.core;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Closes the process-wide Phoenix, so it runs in a JVM of its own (the "lifecycle" surefire
 * execution, fake connector) and never next to tests that hold {@link Fixtures#PHX}.
 */
class PhoenixCloseTest {
    @TempDir
    Path dir;

    private void roundTrip(Phoenix phx, String name, long seed) throws Exception {
        byte[] data = Fixtures.random(100_000, seed);
        Path file = Fixtures.writeFile(dir, name, data);
        Device dev = phx.device(0);
        try (PhxFile f = PhxFile.open(file);
             RegisteredBuffer buf = dev.allocate(data.length)) {
            assertEquals(data.length, f.read(buf, 0, data.length, 0));
            byte[] back = new byte[data.length];
            dev.copyToHost(buf, 0, java.lang.foreign.MemorySegment.ofArray(back));
            Fixtures.assertBytes(data, back, name);
        }
    }

    @Test
    void closeClosesDevicesOnceAndOpenStartsAfresh() throws Exception {
        Phoenix phx = Phoenix.open();
        assertSame(phx, Phoenix.open());
        Device dev = phx.device(0);
        roundTrip(phx, "first.bin", 1);

        phx.close();
        assertTrue(phx.isClosed());
        assertTrue(dev.isClosed());
        phx.close(); // the second close does nothing
        assertThrows(IllegalStateException.class, () -> phx.device(0));
        assertThrows(IllegalStateException.class, () -> dev.allocate(4096));

        Phoenix again = Phoenix.open();
        assertNotSame(phx, again);
        assertFalse(again.isClosed());
        Device dev2 = again.device(0);
        assertNotSame(dev, dev2);
        roundTrip(again, "second.bin", 2);
        again.close();
        again.close();
    }
}
