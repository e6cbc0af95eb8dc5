package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.PHX;
import static io.phxfs.core.Fixtures.dev0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PhoenixTest {

    @Test
    void openIsASingleton() {
        assertSame(PHX, Phoenix.open());
        assertEquals("0.1", PHX.version());
    }

    @Test
    void prelinkingChangesNothing() {
        Device d = dev0();
        try (RegisteredBuffer before = d.allocate(4096)) {
            PHX.prelinkDeviceCalls();
            PHX.prelinkDeviceCalls();
            // the real buffer is untouched and still usable; a second allocation still works
            try (RegisteredBuffer after = d.allocate(4096)) {
                assertTrue(after.size() == 4096 && before.size() == 4096);
            }
        }
    }

    @Test
    void devicesMatchTheConfiguredConnector() {
        int n = PHX.deviceCount();
        assertTrue(n >= 1, "at least the host device");
        Device d = dev0();
        assertSame(d, PHX.device(0), "devices are cached");
        assertEquals(0, d.id());

        String connector = Fixtures.requestedConnector();
        if (connector != null) {
            assertEquals(connector, d.connector());
        }
        switch (d.connector()) {
            case "host" -> {
                assertEquals(Mode.HOST, d.mode());
                assertTrue(d.isHostMemory());
                assertEquals(1, n, "a CPU-only machine exposes one host device");
            }
            case "fake" -> {
                assertEquals(Mode.BOUNCE, d.mode());
                assertFalse(d.isHostMemory());
                assertEquals(Integer.parseInt(System.getenv().getOrDefault("PHX_FAKE_DEVICES", "1")), n);
            }
            case "cuda" -> assertFalse(d.isHostMemory());
            default -> throw new AssertionError("unknown connector " + d.connector());
        }
        assertTrue(Long.bitCount(d.pageSize()) == 1, "page size is a power of two: " + d.pageSize());
        assertTrue(d.workers() >= 1);
        assertFalse(d.name().isEmpty());
        assertTrue(d.toString().contains(d.connector()));
    }

    @Test
    @Tag("io") // runs in the sync-engine execution as well, which is what it checks
    void engineFollowsTheEnvironment() {
        String engine = System.getenv("PHX_ENGINE");
        if (engine != null && !engine.isBlank()) {
            assertEquals(Engine.valueOf(engine.toUpperCase(java.util.Locale.ROOT)), dev0().engine());
            assertEquals(engine, PHX.getConfig("engine"));
        }
    }

    @Test
    void secondFakeDeviceOpensSeparately() {
        if (PHX.deviceCount() < 2) {
            return;
        }
        Device d1 = PHX.device(1);
        assertEquals(1, d1.id());
        try (RegisteredBuffer b = d1.allocate(8192)) {
            assertEquals(1, b.deviceId());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> dev0().copyToHost(b, 0, MemorySegment.ofArray(new byte[16])));
            assertTrue(e.getMessage().contains("device 0"), e.getMessage());
        }
    }

    @Test
    void noSuchDevice() {
        PhoenixException e = assertThrows(PhoenixException.class, () -> PHX.device(PHX.deviceCount()));
        assertTrue(e.getMessage().startsWith("phxfs_open(device " + PHX.deviceCount() + ")"), e.getMessage());
    }

    @Test
    void configRoundTripAndErrors() {
        String before = PHX.getConfig("queue_depth");
        try {
            PHX.setConfig("queue_depth", "17");
            assertEquals("17", PHX.getConfig("queue_depth"));
        } finally {
            PHX.setConfig("queue_depth", before);
        }
        PhoenixException unknown = assertThrows(PhoenixException.class, () -> PHX.setConfig("no_such_key", "1"));
        assertEquals(Errno.EINVAL, unknown.errno());
        assertTrue(unknown.getMessage().startsWith("phxfs_set_config(no_such_key=1): EINVAL ("), unknown.getMessage());
        assertTrue(unknown.nativeMessage().contains("no_such_key"), unknown.nativeMessage());

        assertEquals(Errno.EINVAL, assertThrows(PhoenixException.class, () -> PHX.setConfig("queue_depth", "0")).errno());
        // the pool is running once a device is open: its sizes are fixed
        dev0();
        PhoenixException fixed = assertThrows(PhoenixException.class, () -> PHX.setConfig("workers", "4"));
        assertEquals(Errno.EBUSY, fixed.errno());
        assertTrue(fixed.nativeMessage().contains("PHX_WORKERS"), fixed.nativeMessage());
        assertEquals(Errno.EINVAL, assertThrows(PhoenixException.class, () -> PHX.getConfig("no_such_key")).errno());
    }

    @Test
    void failureMessagesBelongToTheFailure() {
        // phxfs_last_error is per thread: an earlier failure's message must not stick to a later one.
        assertThrows(PhoenixException.class, () -> PHX.setConfig("stale_key", "1"));
        PhoenixException e = assertThrows(PhoenixException.class, () -> dev0().allocate(1L << 60));
        if (!"cuda".equals(dev0().connector())) {
            assertEquals(Errno.ENOMEM, e.errno(), e.getMessage());
        }
        assertFalse(e.getMessage().contains("stale_key"), e.getMessage());
    }

    @Test
    void errnoNames() {
        assertEquals("EFAULT", Errno.name(Errno.EFAULT));
        assertEquals("EBUSY", Errno.name(-16));
        assertEquals("errno 4000", Errno.name(4000));
        PhoenixException e = new PhoenixException("x", Errno.ENOENT);
        assertEquals("x: ENOENT", e.getMessage());
        assertEquals("ENOENT", e.errnoName());
    }

    @Test
    void openFailureNamesThePath(@TempDir Path dir) {
        Path missing = dir.resolve("missing.bin");
        PhoenixException e = assertThrows(PhoenixException.class, () -> PhxFile.open(missing, OpenMode.READ));
        assertEquals(Errno.ENOENT, e.errno());
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
    }

    @Test
    void hostBuffers() {
        Host host = PHX.host();
        assertEquals(-1, host.id());
        RegisteredBuffer b = host.allocate(10_000);
        assertEquals(-1, b.deviceId());
        assertTrue(b.isHost());
        assertEquals(0, b.address() % Host.ALIGNMENT, "page aligned");
        MemorySegment seg = b.segment().orElseThrow();
        assertEquals(10_000, seg.byteSize());
        seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 9_999, (byte) 7);
        b.close();
        b.close();
        assertTrue(b.isClosed());
        assertThrows(IllegalStateException.class, b::address);
        assertThrows(IllegalStateException.class, b::segment);
        assertThrows(IllegalStateException.class, () -> seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0),
                "the segment dies with the buffer");

        assertThrows(IllegalArgumentException.class, () -> host.wrap(MemorySegment.ofArray(new byte[8])));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mine = arena.allocate(64);
            RegisteredBuffer w = host.wrap(mine);
            assertSame(mine, w.segment().orElseThrow());
            w.close();
            mine.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 1); // wrap does not own the memory
        }
    }

    @Test
    void deviceBuffers() {
        Device d = dev0();
        RegisteredBuffer b = d.allocate(3 * 4096 + 5);
        assertEquals(0, b.deviceId());
        assertFalse(b.isHost());
        assertEquals(d.isHostMemory(), b.segment().isPresent());
        byte[] data = Fixtures.random(3 * 4096 + 5, 1);
        d.copyToDevice(MemorySegment.ofArray(data), b, 0);
        Fixtures.assertBytes(data, Fixtures.contents(b, 0, data.length), "copy round trip");
        byte[] tail = new byte[100];
        d.copyToHost(b, data.length - 100, MemorySegment.ofArray(tail));
        Fixtures.assertBytes(data, data.length - 100, tail, "tail");

        PhoenixException e = assertThrows(PhoenixException.class,
                () -> d.copyToHost(b, data.length - 99, MemorySegment.ofArray(new byte[100])));
        assertEquals(Errno.EFAULT, e.errno());

        b.close();
        b.close();
        assertThrows(IllegalStateException.class, b::address);
        assertThrows(IllegalStateException.class,
                () -> d.copyToHost(b, 0, MemorySegment.ofArray(new byte[1])));
        assertThrows(IllegalArgumentException.class, () -> d.allocate(0));
    }
}
