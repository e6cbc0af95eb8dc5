package io.phxfs.core;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import io.phxfs.core.Fixtures.Kind;

import static io.phxfs.core.Fixtures.PHX;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Synchronous reads and writes against files written and read back with java.nio. */
@Tag("io")
class RoundTripTest {
    private static final byte GUARD = (byte) 0x5A;

    @TempDir
    Path dir;

    static java.util.stream.Stream<Arguments> sizes() {
        return java.util.stream.Stream.of(1, 4095, 4097, (64 << 20) + 3)
                .flatMap(n -> Arrays.stream(Kind.values()).map(k -> Arguments.of(k, n)));
    }

    @ParameterizedTest(name = "{0} {1} bytes")
    @MethodSource("sizes")
    void readAtUnalignedOffsets(Kind kind, int size) throws IOException {
        int fileOffset = 13;
        int bufOffset = 7;
        byte[] data = Fixtures.random(fileOffset + size + 4096, size);
        Path file = Fixtures.writeFile(dir, "in.bin", data);
        try (RegisteredBuffer buf = Fixtures.allocate(kind, bufOffset + size + 9); PhxFile f = PhxFile.open(file)) {
            Fixtures.fillByte(buf, GUARD);
            assertEquals(size, f.read(buf, bufOffset, size, fileOffset));
            Fixtures.assertBytes(data, fileOffset, Fixtures.contents(buf, bufOffset, size), "read");
            Fixtures.assertAll(GUARD, Fixtures.contents(buf, 0, bufOffset), "bytes before the request");
            Fixtures.assertAll(GUARD, Fixtures.contents(buf, bufOffset + size, 9), "bytes after the request");
        }
    }

    @ParameterizedTest(name = "{0} {1} bytes")
    @MethodSource("sizes")
    void writeAtUnalignedOffsets(Kind kind, int size) throws IOException {
        int fileOffset = 4093;
        int bufOffset = 11;
        byte[] data = Fixtures.random(size, ~size);
        Path file = dir.resolve("out.bin");
        try (RegisteredBuffer buf = Fixtures.allocate(kind, bufOffset + size);
             PhxFile f = PhxFile.open(file, OpenMode.WRITE, OpenMode.CREATE, OpenMode.TRUNCATE)) {
            Fixtures.fill(buf, bufOffset, data);
            assertEquals(size, f.write(buf, bufOffset, size, fileOffset));
            assertEquals(fileOffset + size, f.size());
        }
        byte[] written = Files.readAllBytes(file);
        assertEquals(fileOffset + size, written.length);
        Fixtures.assertAll((byte) 0, Arrays.copyOf(written, fileOffset), "hole before the write");
        Fixtures.assertBytes(data, Arrays.copyOfRange(written, fileOffset, written.length), "written");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shortReadAtEndOfFile(Kind kind) throws IOException {
        byte[] data = Fixtures.random(1000, 42);
        Path file = Fixtures.writeFile(dir, "short.bin", data);
        try (RegisteredBuffer buf = Fixtures.allocate(kind, 8192); PhxFile f = PhxFile.open(file)) {
            Fixtures.fillByte(buf, GUARD);
            assertEquals(100, f.read(buf, 3, 4096, 900));
            Fixtures.assertBytes(data, 900, Fixtures.contents(buf, 3, 100), "tail");
            Fixtures.assertAll(GUARD, Fixtures.contents(buf, 103, 4096 - 100), "past the short read");
            assertEquals(0, f.read(buf, 0, 4096, 1000), "at end of file");
            assertEquals(0, f.read(buf, 0, 4096, 5000), "past end of file");
            assertEquals(0, f.read(buf, 0, 0, 0), "zero bytes");
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void directIoWhenTheFileSystemAllows(Kind kind) throws IOException {
        byte[] data = Fixtures.random(16 * 4096, 9);
        Path file = Fixtures.writeFile(dir, "direct.bin", data);
        try (RegisteredBuffer buf = Fixtures.allocate(kind, 8 * 4096);
             PhxFile f = PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT)) {
            assertEquals(4 * 4096, f.read(buf, 4096, 4 * 4096, 8192));
            Fixtures.assertBytes(data, 8192, Fixtures.contents(buf, 4096, 4 * 4096), "aligned read, direct=" + f.isDirect());
        }
        Path out = dir.resolve("direct-out.bin");
        try (RegisteredBuffer buf = Fixtures.allocate(kind, 4 * 4096);
             PhxFile f = PhxFile.open(out, OpenMode.WRITE, OpenMode.CREATE, OpenMode.DIRECT)) {
            Fixtures.fill(buf, 0, Arrays.copyOf(data, 4 * 4096));
            assertEquals(4 * 4096, f.write(buf, 0, 4 * 4096, 4096));
        }
        Fixtures.assertBytes(data, 0, Arrays.copyOfRange(Files.readAllBytes(out), 4096, 5 * 4096), "direct write");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void unalignedRequestsOnADirectFile(Kind kind) throws IOException {
        byte[] data = Fixtures.random(3 * 4096, 10);
        Path file = Fixtures.writeFile(dir, "direct-unaligned.bin", data);
        try (RegisteredBuffer buf = Fixtures.allocate(kind, 4 * 4096);
             PhxFile f = PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT)) {
            assertEquals(5000, f.read(buf, 1, 5000, 3));
            Fixtures.assertBytes(data, 3, Fixtures.contents(buf, 1, 5000), "unaligned read, direct=" + f.isDirect());
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void directReadsStopShortAtAnUnalignedEndOfFile(Kind kind) throws IOException {
        byte[] data = Fixtures.random(10_000, 12);
        Path file = Fixtures.writeFile(dir, "direct-eof.bin", data);
        try (RegisteredBuffer buf = Fixtures.allocate(kind, 4 * 4096);
             PhxFile f = PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT)) {
            assertEquals(10_000, f.read(buf, 0, 4 * 4096, 0), "aligned request, direct=" + f.isDirect());
            Fixtures.assertBytes(data, Fixtures.contents(buf, 0, 10_000), "aligned request");
            assertEquals(10_000 - 8192, f.read(buf, 0, 8192, 8192), "aligned request at the last block");
            assertEquals(10_000 - 5, f.read(buf, 3, 4 * 4096 - 3, 5), "unaligned request");
            Fixtures.assertBytes(data, 5, Fixtures.contents(buf, 3, 10_000 - 5), "unaligned request");
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void manySmallSyscallsStillMoveEveryByte(Kind kind) throws IOException {
        String before = PHX.getConfig("max_io_bytes");
        byte[] data = Fixtures.random((1 << 20) + 3, 77);
        Path file = Fixtures.writeFile(dir, "chunks.bin", data);
        try (RegisteredBuffer buf = Fixtures.allocate(kind, data.length + 5); PhxFile f = PhxFile.open(file)) {
            PHX.setConfig("max_io_bytes", "4097");
            assertEquals(data.length - 2, f.read(buf, 5, data.length - 2, 2));
            Fixtures.assertBytes(data, 2, Fixtures.contents(buf, 5, data.length - 2), "read in 4097-byte syscalls");
        } finally {
            PHX.setConfig("max_io_bytes", before);
        }
    }

    @Test
    void hostBufferOverrunIsRefusedInJava() throws IOException {
        Path file = Fixtures.writeFile(dir, "over.bin", Fixtures.random(10_000, 1));
        try (RegisteredBuffer buf = PHX.host().allocate(4096); PhxFile f = PhxFile.open(file)) {
            PhoenixException e = assertThrows(PhoenixException.class, () -> f.read(buf, 4000, 200, 0));
            assertEquals(Errno.EFAULT, e.errno());
            assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> f.read(buf, -1, 10, 0));
            assertThrows(IllegalArgumentException.class, () -> f.read(buf, 0, 10, -5));
        }
    }

    @Test
    void failuresNameTheCallAndItsArguments() throws IOException {
        Path file = Fixtures.writeFile(dir, "wo.bin", new byte[100]);
        try (RegisteredBuffer buf = PHX.host().allocate(4096); PhxFile f = PhxFile.open(file, OpenMode.WRITE)) {
            PhoenixException e = assertThrows(PhoenixException.class, () -> f.read(buf, 0, 10, 0));
            assertEquals(Errno.EBADF, e.errno());
            assertTrue(e.getMessage().startsWith("phxfs_read(" + file + " fd " + f.fd() + ", file offset 0, 10 bytes"),
                    e.getMessage());
            assertTrue(e.getMessage().contains(": EBADF"), e.getMessage());
        }
    }

    @Test
    void closedFilesAndBuffersAreRefused() throws IOException {
        Path file = Fixtures.writeFile(dir, "closed.bin", new byte[100]);
        RegisteredBuffer buf = PHX.host().allocate(4096);
        PhxFile f = PhxFile.open(file);
        assertEquals(100, f.read(buf, 0, 100, 0));
        f.close();
        f.close();
        assertTrue(f.isClosed());
        assertThrows(IllegalStateException.class, () -> f.read(buf, 0, 100, 0));
        assertThrows(IllegalStateException.class, f::fd);
        assertThrows(IllegalStateException.class, f::size);
        try (PhxFile g = PhxFile.open(file)) {
            buf.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.read(buf, 0, 100, 0));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }
}
