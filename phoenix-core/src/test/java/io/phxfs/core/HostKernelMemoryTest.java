package io.phxfs.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.PHX;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/** {@link Host#map} and {@link Host#allocateHuge} on real files: bytes, validation, errors, close. */
class HostKernelMemoryTest {
    @TempDir
    Path dir;

    private static byte[] bytes(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_BYTE);
    }

    @Test
    void mappingEqualsTheFileBytes() throws IOException {
        byte[] data = Fixtures.random(3 * 4096 + 123, 1);
        Path f = Fixtures.writeFile(dir, "a.bin", data);
        try (FileMapping whole = PHX.host().map(f);
             FileMapping part = PHX.host().map(f, 4097, 5000)) { // neither offset nor length page-aligned
            assertArrayEquals(data, bytes(whole.segment()));
            assertArrayEquals(Arrays.copyOfRange(data, 4097, 4097 + 5000), bytes(part.segment()));
            assertEquals(5000, part.byteSize());
            assertEquals(0, part.offsetOf(0));
            assertTrue(part.segment().isReadOnly(), "a write must fail in Java, not fault");
        }
    }

    @Test
    void everyRangeLiesAtItsFileOffsetModuloTwoMebibytes() throws IOException {
        // so that the kernel can map a file's 2 MiB page-cache folios whole (populating a 2 GB
        // file read back from disk took 130 ms merely page-aligned, 4 ms aligned)
        long twoMiB = 2L << 20;
        byte[] data = Fixtures.random((int) (3 * twoMiB + 5000), 4);
        Path f = Fixtures.writeFile(dir, "big.bin", data);
        long[] offsets = {0, 4096 * 3 + 17, twoMiB + 4096, 2 * twoMiB - 1};
        for (long off : offsets) {
            try (FileMapping m = PHX.host().map(f, off, data.length - off);
                 FileMapping two = PHX.host().map(List.of(new FileMapping.Range(f, off, 9_000),
                         new FileMapping.Range(f, twoMiB + off % 4096, 9_000)), true)) {
                assertEquals(off % twoMiB, m.segment().address() % twoMiB, "one range at offset " + off);
                assertArrayEquals(Arrays.copyOfRange(data, (int) off, data.length), bytes(m.segment()));
                MemorySegment s = two.segment();
                assertEquals(off % twoMiB, (s.address() + two.offsetOf(0)) % twoMiB);
                assertEquals((twoMiB + off % 4096) % twoMiB, (s.address() + two.offsetOf(1)) % twoMiB);
                assertArrayEquals(Arrays.copyOfRange(data, (int) off, (int) off + 9_000), bytes(s.asSlice(two.offsetOf(0), 9_000)));
                int b = (int) (twoMiB + off % 4096);
                assertArrayEquals(Arrays.copyOfRange(data, b, b + 9_000), bytes(s.asSlice(two.offsetOf(1), 9_000)));
            }
        }
    }

    /** Resident kilobytes of the mapping that holds {@code address} (/proc/self/smaps), or -1. */
    private static long residentKb(long address) throws IOException {
        List<String> lines = java.nio.file.Files.readAllLines(Path.of("/proc/self/smaps"));
        for (int i = 0; i < lines.size(); i++) {
            String[] f = lines.get(i).split("\\s+");
            if (f.length > 0 && f[0].matches("[0-9a-f]+-[0-9a-f]+")) {
                String[] r = f[0].split("-");
                if (Long.parseUnsignedLong(r[0], 16) <= address && address < Long.parseUnsignedLong(r[1], 16)) {
                    for (int j = i + 1; j < lines.size() && !lines.get(j).matches("^[0-9a-f]+-.*"); j++) {
                        if (lines.get(j).startsWith("Rss:")) {
                            return Long.parseLong(lines.get(j).replaceAll("[^0-9]", ""));
                        }
                    }
                }
            }
        }
        return -1;
    }

    @Test
    void populateFaultsThePagesInAndSurvivesATruncatedFile() throws IOException {
        byte[] data = Fixtures.random(8 << 20, 5);
        Path f = Fixtures.writeFile(dir, "pop.bin", data);
        try (FileMapping m = PHX.host().map(List.of(new FileMapping.Range(f, 0, data.length)), false)) {
            long before = residentKb(m.segment().address());
            m.populate();
            long after = residentKb(m.segment().address());
            assertTrue(after >= (data.length >> 10) - 4, "resident after populate: " + after + " KiB (before " + before + ")");
        }
        // truncated under the mapping: populating stops at the hole, touches nothing itself, and
        // the bytes still in the file read as before
        try (FileMapping m = PHX.host().map(List.of(new FileMapping.Range(f, 0, data.length)), false)) {
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f, java.nio.file.StandardOpenOption.WRITE)) {
                ch.truncate(data.length / 2);
            }
            m.populate();
            assertArrayEquals(Arrays.copyOf(data, 4096), bytes(m.segment().asSlice(0, 4096)));
        }
        FileMapping closed = PHX.host().map(List.of(new FileMapping.Range(f, 0, 4096)), false);
        closed.close();
        closed.populate(); // nothing: a closed mapping
    }

    @Test
    void populateWithHelpersFaultsEveryRangeInAndReturnsOnlyOnceTheyAreDone() throws IOException {
        // 1 MiB steps and any step counted slow: the caller and its helpers share 25 steps over
        // three files, the middle one truncated under the mapping
        byte[][] data = {Fixtures.random(8 << 20, 6), Fixtures.random(8 << 20, 7), Fixtures.random((8 << 20) + 4321, 8)};
        Path[] files = new Path[3];
        List<FileMapping.Range> ranges = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            files[i] = Fixtures.writeFile(dir, "helped" + i + ".bin", data[i]);
            ranges.add(new FileMapping.Range(files[i], 0, data[i].length));
        }
        try (FileMapping m = PHX.host().map(ranges, false)) {
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(files[1], java.nio.file.StandardOpenOption.WRITE)) {
                ch.truncate(4096);
            }
            int helpers = m.populate(1 << 20, 0);
            assertEquals(Math.min(3, Runtime.getRuntime().availableProcessors() - 1), helpers, "helper threads");
            assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals("phoenix-populate")),
                    "a helper still running after populate returned");
            for (int i : new int[] {0, 2}) {
                long kb = residentKb(m.segment().address() + m.offsetOf(i));
                assertTrue(kb >= (data[i].length >> 10) - 4, "file " + i + " resident after populate: " + kb + " KiB");
                assertArrayEquals(data[i], bytes(m.segment().asSlice(m.offsetOf(i), data[i].length)));
            }
            assertArrayEquals(Arrays.copyOf(data[1], 4096), bytes(m.segment().asSlice(m.offsetOf(1), 4096)));
        }
    }

    @Test
    void rangesSideBySide() throws IOException {
        byte[] a = Fixtures.random(10_000, 2);
        byte[] b = Fixtures.random(5_000, 3);
        Path fa = Fixtures.writeFile(dir, "a.bin", a);
        Path fb = Fixtures.writeFile(dir, "b.bin", b);
        try (FileMapping m = PHX.host().map(List.of(new FileMapping.Range(fa, 100, 9_000),
                new FileMapping.Range(fb, 0, 5_000)), true)) {
            MemorySegment s = m.segment();
            assertArrayEquals(Arrays.copyOfRange(a, 100, 9_100), bytes(s.asSlice(m.offsetOf(0), 9_000)));
            assertArrayEquals(b, bytes(s.asSlice(m.offsetOf(1), 5_000)));
            assertEquals(m.offsetOf(1) + 5_000, m.byteSize());
            bytes(s); // the gap between the ranges is readable too: no fault anywhere in the segment
        }
    }

    @Test
    void rangesPastTheEndAreRefused() throws IOException {
        Path f = Fixtures.writeFile(dir, "small.bin", Fixtures.random(100, 4));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PHX.host().map(f, 50, 51));
        assertTrue(e.getMessage().contains(f.toString()) && e.getMessage().contains("100 bytes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PHX.host().map(f, 101, 0));
        assertThrows(IllegalArgumentException.class, () -> PHX.host().map(f, -1, 10));
        assertThrows(IllegalArgumentException.class, () -> PHX.host().map(f, 0, -1));
        assertThrows(IllegalArgumentException.class, () -> PHX.host().map(List.of(), false));
        try (FileMapping empty = PHX.host().map(f, 100, 0)) {
            assertEquals(0, empty.byteSize());
        }
    }

    @Test
    void aMissingFileNamesPathAndReason() {
        Path f = dir.resolve("nope.safetensors");
        PhoenixException e = assertThrows(PhoenixException.class, () -> PHX.host().map(f, 0, 1));
        assertEquals(Errno.ENOENT, e.errno());
        assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("ENOENT (No such file or directory)"), e.getMessage());
    }

    @Test
    void aDirectoryIsRefused() {
        PhoenixException e = assertThrows(PhoenixException.class, () -> PHX.host().map(dir));
        assertEquals(Errno.EISDIR, e.errno());
        assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
    }

    @Test
    void anUnreadableFileNamesPathAndReason() throws IOException {
        Path f = Fixtures.writeFile(dir, "secret.bin", Fixtures.random(10, 5));
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("---------"));
        assumeFalse(Files.isReadable(f), "running as root: permissions do not stop it from reading");
        PhoenixException e = assertThrows(PhoenixException.class, () -> PHX.host().map(f));
        assertEquals(Errno.EACCES, e.errno());
        assertTrue(e.getMessage().contains(f + ": EACCES (Permission denied)"), e.getMessage());
    }

    @Test
    void closeTwiceThenAccessIsAJavaException() throws IOException {
        Path f = Fixtures.writeFile(dir, "c.bin", Fixtures.random(8192, 6));
        FileMapping m = PHX.host().map(f);
        MemorySegment s = m.segment();
        m.close();
        m.close();
        assertTrue(m.isClosed());
        assertThrows(IllegalStateException.class, m::segment);
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void hugeMemoryIsZeroedWritableAndClosesTwice() {
        long n = (4L << 20) + 5;
        RegisteredBuffer b = PHX.host().allocateHuge(n);
        MemorySegment s = b.segment().orElseThrow();
        assertEquals(n, b.size());
        assertEquals(0, b.address() % (2L << 20), "2 MiB-aligned");
        assertEquals(-1, s.asSlice(0, n).mismatch(MemorySegment.ofArray(new byte[(int) n])), "zero-filled");
        s.set(ValueLayout.JAVA_BYTE, n - 1, (byte) 7);
        assertEquals(7, s.get(ValueLayout.JAVA_BYTE, n - 1));
        b.close();
        b.close();
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_BYTE, 0));
        assertThrows(IllegalArgumentException.class, () -> PHX.host().allocateHuge(0));
    }

    @Test
    void hugeMemoryIsAnIoBuffer() throws IOException {
        byte[] data = Fixtures.random(100_000, 7);
        Path f = Fixtures.writeFile(dir, "io.bin", data);
        try (RegisteredBuffer b = PHX.host().allocateHuge(data.length);
             PhxFile file = PhxFile.open(f, OpenMode.READ)) {
            assertEquals(data.length, file.read(b, 0, data.length, 0));
            assertArrayEquals(data, Fixtures.contents(b, 0, data.length));
        }
    }
}
