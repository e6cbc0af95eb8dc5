package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.PHX;
import static io.phxfs.core.Fixtures.dev0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Memory and streams the caller brings or pins (phoenix.h core-2): pinned host buffers, a
 * caller's device pointer and stream, asynchronous copies on a stream.
 */
@Tag("io")
class CallerMemoryTest {
    @TempDir
    Path dir;

    /** A device pointer that phoenix-core does not own, as another framework would hand over. */
    private static MemorySegment rawDeviceMemory(Device d, long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            assertEquals(0, MemoryCalls.memAlloc(d.id(), bytes, out), NativeLibrary.lastError());
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }

    /** A stream that phoenix-core does not own. */
    private static MemorySegment rawStream(Device d) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            assertEquals(0, StreamCalls.streamCreate(d.id(), out), NativeLibrary.lastError());
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }

    @Test
    void pinnedHostBufferIsHostMemoryThatCloseFrees() throws Exception {
        byte[] data = Fixtures.random(70_000, 41);
        Path p = Fixtures.writeFile(dir, "pinned.bin", data);
        RegisteredBuffer pinned = PHX.host().allocatePinned(70_001);
        try (PhxFile f = PhxFile.open(p)) {
            assertTrue(pinned.isHost());
            assertEquals(70_001, pinned.size());
            assertTrue(pinned.segment().isPresent(), "Java may touch pinned host memory");
            assertEquals(70_000, f.read(pinned, 1, 70_000, 0));
            Fixtures.assertBytes(data, Fixtures.contents(pinned, 1, 70_000), "read into pinned memory");
        } finally {
            pinned.close();
        }
        pinned.close(); // the second close does nothing
        assertTrue(pinned.isClosed());
        assertThrows(IllegalStateException.class, pinned::segment);
        assertThrows(IllegalArgumentException.class, () -> PHX.host().allocatePinned(0));
    }

    @Test
    @SuppressWarnings("restricted") // the range phxfs_mem_alloc returned
    void wrappedDevicePointerIsRegisteredForIoAndNeverFreed() throws Exception {
        Device d = dev0();
        byte[] data = Fixtures.random(50_000, 42);
        Path p = Fixtures.writeFile(dir, "wrapped.bin", data);
        long bytes = 65_536;
        MemorySegment ptr = rawDeviceMemory(d, bytes);
        try {
            RegisteredBuffer buf = d.wrap(ptr, bytes);
            try (PhxFile f = PhxFile.open(p)) {
                assertEquals(d.id(), buf.deviceId());
                assertEquals(ptr.address(), buf.address());
                assertEquals(50_000, f.read(buf, 7, 50_000, 0));
                Fixtures.assertBytes(data, Fixtures.contents(buf, 7, 50_000), "read into the caller's memory");
            } finally {
                buf.close();
            }
            buf.close();
            // Deregistered: registering the same range again succeeds, and the memory is still
            // the caller's (its bytes are intact), so close freed nothing.
            RegisteredBuffer again = d.register(ptr.reinterpret(bytes));
            try {
                Fixtures.assertBytes(data, Fixtures.contents(again, 7, 50_000), "bytes survive the wrapper's close");
            } finally {
                again.close();
            }
        } finally {
            assertEquals(0, MemoryCalls.memFree(d.id(), ptr));
        }
    }

    @Test
    void wrapRefusesHostMemoryWithLibphoenixMessage() {
        Device d = dev0();
        assumeTrue(!d.isHostMemory(), "on the host connector host memory is device memory");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4096, 4096);
            PhoenixException e = assertThrows(PhoenixException.class, () -> d.wrap(host, 4096));
            assertEquals(Errno.EINVAL, e.errno());
            assertFalse(e.nativeMessage().isEmpty(), "libphoenix says what the memory is: " + e.getMessage());
            assertTrue(e.getMessage().startsWith("phxfs_check_device_pointer(device " + d.id()), e.getMessage());
        }
    }

    @Test
    void wrapRefusesAnotherDevicesMemory() {
        assumeTrue(PHX.deviceCount() >= 2 && !dev0().isHostMemory(), "needs two accelerator devices");
        Device d1 = PHX.device(1);
        MemorySegment ptr = rawDeviceMemory(d1, 4096);
        try {
            PhoenixException e = assertThrows(PhoenixException.class, () -> dev0().wrap(ptr, 4096));
            assertEquals(Errno.EINVAL, e.errno());
        } finally {
            assertEquals(0, MemoryCalls.memFree(d1.id(), ptr));
        }
    }

    @Test
    void wrappedStreamCarriesStreamOrderedIoAndStaysAlive() throws Exception {
        Device d = dev0();
        byte[] data = Fixtures.random(300_000, 43);
        Path p = Fixtures.writeFile(dir, "stream.bin", data);
        MemorySegment raw = rawStream(d);
        try {
            DeviceStream s = DeviceStream.wrap(d, raw);
            assertFalse(s.ownsStream());
            assertEquals(raw.address(), s.handle().address());
            try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = d.allocate(300_000)) {
                StreamOp op = f.readAsync(s, buf, 0, 300_000, 0);
                s.synchronize();
                assertEquals(300_000, op.throwIfFailed());
                Fixtures.assertBytes(data, Fixtures.contents(buf, 0, 300_000), "read on the caller's stream");
                StreamOp pending = f.readAsync(s, buf, 0, 1000, 5);
                s.close(); // synchronises, does not destroy
                assertTrue(pending.isDone());
                assertEquals(1000, pending.bytesDone());
            }
            s.close();
            assertEquals(0, StreamCalls.streamSynchronize(d.id(), raw), "the caller's stream is still alive");
        } finally {
            assertEquals(0, StreamCalls.streamDestroy(d.id(), raw));
        }
        assertThrows(IllegalArgumentException.class, () -> DeviceStream.wrap(d, MemorySegment.NULL));
    }

    @Test
    void wrapRefusesAnotherDevicesStream() {
        assumeTrue(PHX.deviceCount() >= 2 && !dev0().isHostMemory(), "needs two accelerator devices");
        Device d1 = PHX.device(1);
        MemorySegment raw = rawStream(d1);
        try {
            PhoenixException e = assertThrows(PhoenixException.class, () -> DeviceStream.wrap(dev0(), raw));
            assertEquals(Errno.EINVAL, e.errno());
        } finally {
            assertEquals(0, StreamCalls.streamDestroy(d1.id(), raw));
        }
    }

    @Test
    void asyncCopiesRoundTripThroughDeviceMemoryInStreamOrder() {
        Device d = dev0();
        int n = 1 << 20;
        byte[] data = Fixtures.random(n, 44);
        try (RegisteredBuffer src = PHX.host().allocatePinned(n);
             RegisteredBuffer back = PHX.host().allocatePinned(n + 3);
             RegisteredBuffer dev = d.allocate(n + 9);
             DeviceStream s = d.createStream()) {
            Fixtures.fill(src, 0, data);
            s.copyToDevice(src, 0, dev, 9, n);
            s.copyToHost(dev, 9, back, 3, n); // queued behind the first copy on the same stream
            PhoenixException busy = assertThrows(PhoenixException.class, src::close, "in use until synchronised");
            assertEquals(Errno.EBUSY, busy.errno());
            s.synchronize();
            Fixtures.assertBytes(data, Fixtures.contents(back, 3, n), "host -> device -> host");
            Fixtures.assertBytes(data, Fixtures.contents(dev, 9, n), "device copy");
        }
    }

    @Test
    void asyncCopyBoundsAreCheckedInJava() {
        Device d = dev0();
        try (RegisteredBuffer host = PHX.host().allocate(4096);
             RegisteredBuffer dev = d.allocate(4096);
             DeviceStream s = d.createStream()) {
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
                    () -> s.copyToDevice(host, 100, dev, 0, 4000));
            assertTrue(e.getMessage().contains("source range [100, 100 + 4000)"), e.getMessage());
            e = assertThrows(IndexOutOfBoundsException.class, () -> s.copyToHost(dev, 0, host, 4095, 2));
            assertTrue(e.getMessage().contains("destination range"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> s.copyToDevice(host, -1, dev, 0, 1));
            assertThrows(IllegalArgumentException.class, () -> s.copyToDevice(dev, 0, host, 0, 1), "wrong way round");
            s.copyToDevice(host, 0, dev, 0, 0); // empty: nothing queued
        }
    }
}
