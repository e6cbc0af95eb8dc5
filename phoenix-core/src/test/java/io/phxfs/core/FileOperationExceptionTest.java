package io.phxfs.core;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The errno behind java.nio's exceptions, recovered from real failures on real files (the JDK
 * keeps some as exception types and only strerror's text of the others), and the one message
 * format every OS error is shown in.
 */
class FileOperationExceptionTest {
    @TempDir
    Path dir;

    private static IOException caught(IoAction a) {
        return assertThrows(IOException.class, a::run);
    }

    private interface IoAction {
        void run() throws IOException;
    }

    @Test
    void aSymlinkLoopIsEloopWhateverTextTheJdkPutsBeforeItsSuffix() throws IOException {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        Files.createSymbolicLink(a, b);
        Files.createSymbolicLink(b, a);
        IOException real = assertThrows(IOException.class, () -> Files.readAttributes(a, BasicFileAttributes.class));
        assertEquals(OptionalInt.of(Errno.ELOOP), Errno.of(real), real.toString());
        // what JDK 25 produced for the same loop when run from the CLI's AOT cache
        IOException seen = new java.nio.file.FileSystemException(a.toString(), null,
                "No such file or directory or unable to access attributes of symbolic link");
        assertEquals(OptionalInt.of(Errno.ELOOP), Errno.of(seen));
        assertEquals("open " + a + ": ELOOP (Too many levels of symbolic links)",
                FileOperationException.of("open", a, seen).getMessage());
    }

    /** A reason the thrower gave with a missing path (why it was needed) is kept, without the path twice. */
    @Test
    void aReasonGivenWithAMissingPathIsKept() {
        Path f = dir.resolve("tokenizer.json");
        assertEquals(f + ": ENOENT (No such file or directory); serve needs the tokenizer",
                FileOperationException.of(null, f, new java.nio.file.NoSuchFileException(f.toString(), null,
                        "serve needs the tokenizer")).getMessage());
        assertEquals("open " + f + ": ENOENT (No such file or directory); no object",
                FileOperationException.of("open", f, new java.nio.file.NoSuchFileException(null, null,
                        f + ": no object")).getMessage());
    }

    @Test
    void aMissingFileIsEnoent() {
        Path f = dir.resolve("absent.safetensors");
        IOException e = caught(() -> FileChannel.open(f).close());
        assertEquals(OptionalInt.of(Errno.ENOENT), Errno.of(e));
        assertEquals("open " + f + ": ENOENT (No such file or directory)",
                FileOperationException.of("open", f, e).getMessage());
    }

    @Test
    void aSymlinkLoopIsEloopThoughTheJdkAddsWordsToStrerror() throws IOException {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        Files.createSymbolicLink(a, b);
        Files.createSymbolicLink(b, a);
        IOException e = caught(() -> FileChannel.open(a).close());
        assertEquals(OptionalInt.of(Errno.ELOOP), Errno.of(e), e.toString());
        FileOperationException f = assertInstanceOf(FileOperationException.class, FileOperationException.of("open", a, e));
        assertEquals("open " + a + ": ELOOP (Too many levels of symbolic links)", f.getMessage());
        assertSame(e, f.getCause());
    }

    @Test
    void aFileUsedAsADirectoryIsEnotdirEvenWhereTheJdkSaysNoSuchFile() throws IOException {
        Path file = Files.writeString(dir.resolve("model.safetensors"), "x");
        Path below = file.resolve("inner");
        // open(2) reports ENOTDIR; the JDK's stat turns it into NoSuchFileException
        IOException viaOpen = caught(() -> FileChannel.open(below).close());
        IOException viaStat = caught(() -> Files.readAttributes(below, BasicFileAttributes.class));
        String expected = "open " + below + ": ENOTDIR (Not a directory)";
        assertEquals(expected, FileOperationException.of("open", below, viaOpen).getMessage());
        assertEquals(expected, FileOperationException.of("open", below, viaStat).getMessage());
    }

    @Test
    void readingADirectoryIsEisdirFromAPlainIoExceptionsText() throws IOException {
        IOException e;
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            e = caught(() -> ch.read(ByteBuffer.allocate(8), 0));
        }
        assertEquals(OptionalInt.of(Errno.EISDIR), Errno.of(e), e.toString());
        assertEquals("read " + dir + ": EISDIR (Is a directory)", FileOperationException.of("read", dir, e).getMessage());
    }

    @Test
    void accessDeniedIsEaccesAndAnUnknownOperationLeavesTheVerbOut() {
        Path f = dir.resolve("secret.bin");
        IOException e = new AccessDeniedException(f.toString());
        FileOperationException d = assertInstanceOf(FileOperationException.class, FileOperationException.of(null, f, e));
        assertEquals(Errno.EACCES, d.errno());
        assertEquals("EACCES", d.errnoName());
        // root may search every directory, so no "no permission to enter" detail can show here
        assertEquals(f + ": EACCES (Permission denied)", d.getMessage());
    }

    @Test
    void anExceptionWithoutAnErrnoIsReturnedAsItIs() {
        IOException e = new IOException("stream closed by peer");
        assertEquals(OptionalInt.empty(), Errno.of(e));
        assertSame(e, FileOperationException.of("read", dir, e));
    }

    @Test
    void strerrorTextComesFromTheCLibrary() {
        assertEquals("No space left on device", Errno.text(Errno.ENOSPC));
        assertEquals(OptionalInt.of(Errno.EROFS), Errno.of(new IOException("Read-only file system")));
        assertEquals("write /data/x: ENOSPC (No space left on device)",
                new FileOperationException("write", Path.of("/data/x"), Errno.ENOSPC, null, null).getMessage());
    }
}
