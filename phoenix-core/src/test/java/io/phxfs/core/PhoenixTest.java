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
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class PhoenixTest {

    @Test
    void openIsASingleton() {
        assertSame(PHX, Phoenix.open());
    }

    @Test
    void versionsAgreeWithThePom() {
        String pom = System.getProperty("phx.project.version");
        assertEquals(pom, Phoenix.bindingsVersion());
        // libphoenix carries the release without Maven's -SNAPSHOT qualifier
        String release = pom.replaceFirst("-.*", "");
        assertEquals(release, PHX.version(), "the loaded libphoenix");
        assertEquals(release, Phoenix.API_VERSION_MAJOR + "." + Phoenix.API_VERSION_MINOR + "." + Phoenix.API_VERSION_PATCH);
    }

    @Test
    void prelinkingChangesNothing() {
        // prelinking calls each entry point on device -1; were one to reach a real device it
        // could free or overwrite this buffer, or leave the registry unable to take another
        Device d = dev0();
        byte[] data = Fixtures.random(4096, 7);
        try (RegisteredBuffer before = d.allocate(4096)) {
            d.copyToDevice(MemorySegment.ofArray(data), before, 0);
            long address = before.address();
            PHX.prelinkDeviceCalls();
            PHX.prelinkDeviceCalls();
            assertEquals(address, before.address());
            Fixtures.assertBytes(data, Fixtures.contents(before, 0, data.length), "buffer after prelinking");
            try (RegisteredBuffer after = d.allocate(4096)) {
                assertFalse(after.address() == address, "a second allocation got the live buffer's address");
                byte[] other = Fixtures.random(4096, 8);
                d.copyToDevice(MemorySegment.ofArray(other), after, 0);
                Fixtures.assertBytes(other, Fixtures.contents(after, 0, other.length), "second buffer");
                Fixtures.assertBytes(data, Fixtures.contents(before, 0, data.length), "first buffer untouched");
            }
        }
    }

    /** Host memory is Phoenix.host(), not a device id: device(-1) says so instead of failing with ENODEV. */
    @Test
    void negativeDeviceIdPointsToHost() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PHX.device(-1));
        assertTrue(e.getMessage().contains("Phoenix.host()"), e.getMessage());
        assertEquals(-1, PHX.host().id());
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
                assertEquals(Integer.toString(n), PHX.getConfig("fake_devices"));
                assertTrue(d.name().startsWith("fake device 0"), d.name());
            }
            case "cuda" -> assertFalse(d.isHostMemory());
            default -> throw new AssertionError("unknown connector " + d.connector());
        }
        assertEquals(1, Long.bitCount(d.pageSize()), "page size is a power of two: " + d.pageSize());
        // the device reports the pool it runs on, which the configuration sized
        assertEquals(Integer.parseInt(PHX.getConfig("workers")), d.workers());
        assertEquals(Long.parseLong(PHX.getConfig("slot_kb")) << 10, d.slotBytes());
        assertEquals(Integer.parseInt(PHX.getConfig("slots")), d.slotsPerWorker());
        assertFalse(d.name().isBlank());
        assertTrue(d.toString().contains(d.connector()), d.toString());
    }

    @Test
    @Tag("io") // runs in the sync-engine execution as well, which is what it checks
    void engineFollowsTheEnvironment() {
        String engine = System.getenv("PHX_ENGINE");
        assumeTrue(engine != null && !engine.isBlank(),
                "PHX_ENGINE is not set in this execution (the sync-engine one sets it)");
        assertEquals(Engine.valueOf(engine.toUpperCase(java.util.Locale.ROOT)), dev0().engine());
        assertEquals(engine, PHX.getConfig("engine"));
    }

    @Test
    void secondFakeDeviceOpensSeparately() {
        assumeTrue(PHX.deviceCount() >= 2,
                "one device here; the fake-device execution has two (PHX_FAKE_DEVICES=2)");
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
        // max_io_bytes and mode are the keys that can still change after open(); pool keys
        // cannot (below)
        String cap = PHX.getConfig("max_io_bytes");
        try {
            PHX.setConfig("max_io_bytes", "65536");
            assertEquals("65536", PHX.getConfig("max_io_bytes"));
            PhoenixException suffix = assertThrows(PhoenixException.class, () -> PHX.setConfig("max_io_bytes", "64k"));
            assertEquals(Errno.EINVAL, suffix.errno());
            assertTrue(suffix.nativeMessage().contains("max_io_bytes '64k'"), suffix.nativeMessage());
            assertEquals("65536", PHX.getConfig("max_io_bytes"), "a rejected value changes nothing");
        } finally {
            PHX.setConfig("max_io_bytes", cap);
        }
        assertEquals(cap, PHX.getConfig("max_io_bytes"));
        String mode = PHX.getConfig("mode");
        try {
            PHX.setConfig("mode", "bounce");
            assertEquals("bounce", PHX.getConfig("mode"));
        } finally {
            PHX.setConfig("mode", mode);
        }
        assertEquals(mode, PHX.getConfig("mode"));
        PhoenixException badMode = assertThrows(PhoenixException.class, () -> PHX.setConfig("mode", "warp"));
        assertEquals(Errno.EINVAL, badMode.errno());
        assertTrue(badMode.nativeMessage().contains("warp"), badMode.nativeMessage());

        PhoenixException unknown = assertThrows(PhoenixException.class, () -> PHX.setConfig("no_such_key", "1"));
        assertEquals(Errno.EINVAL, unknown.errno());
        assertTrue(unknown.getMessage().startsWith("phxfs_set_config(no_such_key=1): EINVAL ("), unknown.getMessage());
        assertTrue(unknown.nativeMessage().contains("no_such_key"), unknown.nativeMessage());

        assertEquals(Errno.EINVAL, assertThrows(PhoenixException.class, () -> PHX.setConfig("max_io_bytes", "0")).errno());
        // Phoenix.open() ran phxfs_init, which started the pool: its sizes are fixed, even to
        // the value they already have, and the message names the key and its variable
        for (String key : new String[] {"engine", "workers", "slot_mb", "slot_kb", "slots", "pinned_mb", "chunk_mb",
                "queue_depth", "inline_kb", "connector", "fake_devices", "fresh_fill", "huge_fill"}) {
            String value = PHX.getConfig(key);
            PhoenixException fixed = assertThrows(PhoenixException.class, () -> PHX.setConfig(key, value), key);
            assertEquals(Errno.EBUSY, fixed.errno(), key);
            assertTrue(fixed.nativeMessage().startsWith(key + " "), fixed.nativeMessage());
            assertTrue(fixed.nativeMessage().contains("PHX_" + key.toUpperCase(java.util.Locale.ROOT)),
                    fixed.nativeMessage());
            assertEquals(value, PHX.getConfig(key), key + " unchanged");
        }
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
