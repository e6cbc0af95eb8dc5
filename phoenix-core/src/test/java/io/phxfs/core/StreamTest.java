package io.phxfs.core;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.PHX;
import static io.phxfs.core.Fixtures.dev0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Stream-ordered I/O: results after synchronize, ordering of reads and writes on one stream. */
@Tag("io")
class StreamTest {
    @TempDir
    Path dir;

    @Test
    void readAsyncThenSynchronizeThenCopyToHost() throws IOException {
        byte[] data = Fixtures.random(1 << 20, 21);
        Path p = Fixtures.writeFile(dir, "in.bin", data);
        Device d = dev0();
        try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = d.allocate(400_000); DeviceStream s = d.createStream()) {
            StreamOp op = f.readAsync(s, buf, 5, 300_000, 17);
            assertThrows(IllegalStateException.class, op::bytesDone, "no result before synchronize");
            s.synchronize();
            assertTrue(op.isDone());
            assertEquals(300_000, op.bytesDone());
            assertEquals(300_000, op.throwIfFailed());
            byte[] out = new byte[300_000];
            d.copyToHost(buf, 5, java.lang.foreign.MemorySegment.ofArray(out));
            Fixtures.assertBytes(data, 17, out, "stream read");
        }
    }

    @Test
    void writeFollowsReadOnTheSameBufferInStreamOrder() throws IOException {
        int n = 3 * 65_536 + 11;
        byte[] a = Fixtures.random(n + 100, 22);
        byte[] c = Fixtures.random(n + 100, 23);
        Path pa = Fixtures.writeFile(dir, "a.bin", a);
        Path pc = Fixtures.writeFile(dir, "c.bin", c);
        Path out = dir.resolve("out.bin");
        Device d = dev0();
        try (PhxFile fa = PhxFile.open(pa); PhxFile fc = PhxFile.open(pc);
             PhxFile fo = PhxFile.open(out, OpenMode.WRITE, OpenMode.CREATE);
             RegisteredBuffer buf = d.allocate(n + 3); DeviceStream s = d.createStream()) {
            StreamOp[] ops = {
                fa.readAsync(s, buf, 3, n, 1),
                fo.writeAsync(s, buf, 3, n, 0),
                fc.readAsync(s, buf, 3, n, 2), // overwrites the buffer only after the write has taken it
                fo.writeAsync(s, buf, 3, n, n),
            };
            s.synchronize();
            for (StreamOp op : ops) {
                assertEquals(n, op.bytesDone(), op.toString());
            }
        }
        byte[] written = Files.readAllBytes(out);
        assertEquals(2 * n, written.length);
        Fixtures.assertBytes(a, 1, Arrays.copyOf(written, n), "first write saw the first read");
        Fixtures.assertBytes(c, 2, Arrays.copyOfRange(written, n, 2 * n), "second write saw the second read");
    }

    @Test
    void largeOpsSpanSeveralSlots() throws IOException {
        Device d = dev0();
        int n = (int) Math.min(2 * d.slotBytes() + 12_345, 40 << 20);
        byte[] data = Fixtures.random(n + 7, 28);
        Path in = Fixtures.writeFile(dir, "big.bin", data);
        Path out = dir.resolve("big-out.bin");
        try (PhxFile f = PhxFile.open(in); PhxFile o = PhxFile.open(out, OpenMode.WRITE, OpenMode.CREATE);
             RegisteredBuffer buf = d.allocate(n + 64); DeviceStream s = d.createStream()) {
            Fixtures.fillByte(buf, (byte) 0x3C);
            StreamOp read = f.readAsync(s, buf, 64, n, 7);
            StreamOp write = o.writeAsync(s, buf, 64, n, 0);
            // The end of the file falls inside a middle slot; what lies past it stays as it was.
            StreamOp tail = f.readAsync(s, buf, 0, n, (long) n + 7 - d.slotBytes() - 100);
            s.synchronize();
            assertEquals(n, read.bytesDone());
            assertEquals(n, write.bytesDone());
            assertEquals(d.slotBytes() + 100, tail.bytesDone());
            byte[] expectTail = Arrays.copyOfRange(data, data.length - (int) d.slotBytes() - 100, data.length);
            Fixtures.assertBytes(expectTail, Fixtures.contents(buf, 0, expectTail.length), "short multi-slot read");
            Fixtures.assertBytes(data, 7 + expectTail.length - 64,
                    Fixtures.contents(buf, expectTail.length, n + 64 - expectTail.length), "beyond the short read");
        }
        Fixtures.assertBytes(data, 7, Files.readAllBytes(out), "multi-slot write");
    }

    @Test
    void directFilesAtUnalignedOffsets() throws IOException {
        byte[] data = Fixtures.random(100_003, 29);
        Path in = Fixtures.writeFile(dir, "d.bin", data);
        Path out = dir.resolve("d-out.bin");
        Device d = dev0();
        try (PhxFile f = PhxFile.open(in, OpenMode.READ, OpenMode.DIRECT);
             PhxFile o = PhxFile.open(out, OpenMode.WRITE, OpenMode.CREATE, OpenMode.DIRECT);
             RegisteredBuffer buf = d.allocate(120_000); DeviceStream s = d.createStream()) {
            StreamOp aligned = f.readAsync(s, buf, 0, 8192, 4096);
            StreamOp unaligned = f.readAsync(s, buf, 10_001, 99_000, 1_003);
            StreamOp past = f.readAsync(s, buf, 8192, 1000, 99_500);
            StreamOp write = o.writeAsync(s, buf, 10_001, 99_000, 5);
            s.synchronize();
            assertEquals(8192, aligned.bytesDone());
            assertEquals(99_000, unaligned.bytesDone());
            assertEquals(503, past.bytesDone());
            assertEquals(99_000, write.bytesDone());
            Fixtures.assertBytes(data, 4096, Fixtures.contents(buf, 0, 8192), "aligned, direct=" + f.isDirect());
            Fixtures.assertBytes(data, 99_500, Fixtures.contents(buf, 8192, 503), "to the end");
            Fixtures.assertBytes(data, 1_003, Fixtures.contents(buf, 10_001, 99_000), "unaligned");
        }
        byte[] written = Files.readAllBytes(out);
        Fixtures.assertBytes(data, 1_003, Arrays.copyOfRange(written, 5, written.length), "unaligned direct write");
    }

    @Test
    void shortStreamReadKeepsTheRestOfTheBuffer() throws IOException {
        byte[] data = Fixtures.random(10_000, 24);
        Path p = Fixtures.writeFile(dir, "short.bin", data);
        Device d = dev0();
        try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = d.allocate(8192); DeviceStream s = d.createStream()) {
            Fixtures.fillByte(buf, (byte) 0xAB);
            StreamOp op = f.readAsync(s, buf, 0, 100, 10_000 - 40);
            StreamOp eof = f.readAsync(s, buf, 200, 100, 10_000);
            s.synchronize();
            assertEquals(40, op.bytesDone());
            assertEquals(0, eof.bytesDone());
            Fixtures.assertBytes(data, 10_000 - 40, Fixtures.contents(buf, 0, 40), "short read");
            Fixtures.assertAll((byte) 0xAB, Fixtures.contents(buf, 40, 8192 - 40), "untouched past the short read");
        }
    }

    @Test
    void aFailedOpDoesNotStopTheStream() throws IOException {
        byte[] data = Fixtures.random(10_000, 25);
        Path p = Fixtures.writeFile(dir, "ok.bin", data);
        Path wo = Fixtures.writeFile(dir, "wo.bin", new byte[100]);
        Device d = dev0();
        try (PhxFile f = PhxFile.open(p); PhxFile w = PhxFile.open(wo, OpenMode.WRITE);
             RegisteredBuffer buf = d.allocate(8192); DeviceStream s = d.createStream()) {
            StreamOp bad;
            try {
                bad = w.readAsync(s, buf, 0, 100, 0);
            } catch (PhoenixException refusedAtEnqueue) {
                assertEquals(Errno.EBADF, refusedAtEnqueue.errno());
                bad = null;
            }
            StreamOp good = f.readAsync(s, buf, 0, 5000, 0);
            s.synchronize();
            if (bad != null) {
                assertEquals(-Errno.EBADF, bad.bytesDone());
                assertTrue(bad.failed());
                PhoenixException e = assertThrows(PhoenixException.class, bad::throwIfFailed);
                assertTrue(e.getMessage().startsWith("phxfs_read_stream(" + wo), e.getMessage());
            }
            assertEquals(5000, good.bytesDone());
            Fixtures.assertBytes(data, 0, Fixtures.contents(buf, 0, 5000), "read after the failure");
        }
    }

    @Test
    void aRefusedEnqueueHoldsItsBufferUntilSynchronize() throws IOException {
        Path p = Fixtures.writeFile(dir, "r.bin", new byte[10_000]);
        Device d = dev0();
        RegisteredBuffer buf = d.allocate(8192);
        try (PhxFile f = PhxFile.open(p); DeviceStream s = d.createStream()) {
            PhoenixException e = assertThrows(PhoenixException.class, () -> f.readAsync(s, buf, 8000, 500, 0));
            assertEquals(Errno.EFAULT, e.errno(), e.getMessage());
            assertTrue(e.getMessage().startsWith("phxfs_read_stream(" + p), e.getMessage());
            assertEquals(Errno.EBUSY, assertThrows(PhoenixException.class, buf::close).errno());
            s.synchronize();
            buf.close();
            assertTrue(buf.isClosed());
        }
    }

    @Test
    void hostBuffersWorkOnAStreamToo() throws IOException {
        byte[] data = Fixtures.random(50_000, 26);
        Path p = Fixtures.writeFile(dir, "h.bin", data);
        try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = PHX.host().allocate(50_000);
             DeviceStream s = dev0().createStream()) {
            StreamOp op = f.readAsync(s, buf, 1, 49_000, 999);
            s.synchronize();
            assertEquals(49_000, op.bytesDone());
            Fixtures.assertBytes(data, 999, Fixtures.contents(buf, 1, 49_000), "host buffer via stream");
        }
    }

    @Test
    void pendingOpsHoldTheirBufferAndCloseSynchronizes() throws IOException {
        byte[] data = Fixtures.random(100_000, 27);
        Path p = Fixtures.writeFile(dir, "p.bin", data);
        Device d = dev0();
        RegisteredBuffer buf = d.allocate(100_000);
        PhxFile f = PhxFile.open(p);
        DeviceStream s = d.createStream();
        StreamOp op = f.readAsync(s, buf, 0, 100_000, 0);
        assertEquals(Errno.EBUSY, assertThrows(PhoenixException.class, buf::close).errno());
        assertEquals(Errno.EBUSY, assertThrows(PhoenixException.class, f::close).errno());
        assertFalse(buf.isClosed());
        s.close();
        assertTrue(op.isDone());
        assertEquals(100_000, op.bytesDone());
        assertThrows(IllegalStateException.class, s::synchronize);
        assertThrows(IllegalStateException.class, () -> f.readAsync(s, buf, 0, 1, 0));
        Fixtures.assertBytes(data, Fixtures.contents(buf, 0, 100_000), "read completed by close");
        buf.close();
        f.close();
    }
}
