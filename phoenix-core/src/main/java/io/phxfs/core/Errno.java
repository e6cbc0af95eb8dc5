package io.phxfs.core;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.NotLinkException;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Linux errno values that libphoenix returns (negated), with their symbolic names.
 * The numbers are the x86-64 / aarch64 Linux ones, the only platforms libphoenix targets.
 */
public final class Errno {
    /** EPERM (1): Operation not permitted. */
    public static final int EPERM = 1;
    /** ENOENT (2): No such file or directory. */
    public static final int ENOENT = 2;
    /** EINTR (4): Interrupted system call. */
    public static final int EINTR = 4;
    /** EIO (5): Input/output error. */
    public static final int EIO = 5;
    /** ENXIO (6): No such device or address. */
    public static final int ENXIO = 6;
    /** E2BIG (7): Argument list too long. */
    public static final int E2BIG = 7;
    /** EBADF (9): Bad file descriptor. */
    public static final int EBADF = 9;
    /** EAGAIN (11): Resource temporarily unavailable. */
    public static final int EAGAIN = 11;
    /** ENOMEM (12): Cannot allocate memory. */
    public static final int ENOMEM = 12;
    /** EACCES (13): Permission denied. */
    public static final int EACCES = 13;
    /** EFAULT (14): Bad address. */
    public static final int EFAULT = 14;
    /** EBUSY (16): Device or resource busy. */
    public static final int EBUSY = 16;
    /** EEXIST (17): File exists. */
    public static final int EEXIST = 17;
    /** EXDEV (18): Invalid cross-device link. */
    public static final int EXDEV = 18;
    /** ENODEV (19): No such device. */
    public static final int ENODEV = 19;
    /** ENOTDIR (20): Not a directory. */
    public static final int ENOTDIR = 20;
    /** EISDIR (21): Is a directory. */
    public static final int EISDIR = 21;
    /** EINVAL (22): Invalid argument. */
    public static final int EINVAL = 22;
    /** ENFILE (23): Too many open files in system. */
    public static final int ENFILE = 23;
    /** EMFILE (24): Too many open files. */
    public static final int EMFILE = 24;
    /** ENOTTY (25): Inappropriate ioctl for device. */
    public static final int ENOTTY = 25;
    /** EFBIG (27): File too large. */
    public static final int EFBIG = 27;
    /** ENOSPC (28): No space left on device. */
    public static final int ENOSPC = 28;
    /** ESPIPE (29): Illegal seek. */
    public static final int ESPIPE = 29;
    /** EROFS (30): Read-only file system. */
    public static final int EROFS = 30;
    /** EPIPE (32): Broken pipe. */
    public static final int EPIPE = 32;
    /** ERANGE (34): Numerical result out of range. */
    public static final int ERANGE = 34;
    /** ENAMETOOLONG (36): File name too long. */
    public static final int ENAMETOOLONG = 36;
    /** ENOSYS (38): Function not implemented. */
    public static final int ENOSYS = 38;
    /** ENOTEMPTY (39): Directory not empty. */
    public static final int ENOTEMPTY = 39;
    /** ELOOP (40): Too many levels of symbolic links. */
    public static final int ELOOP = 40;
    /** ENODATA (61): No data available. */
    public static final int ENODATA = 61;
    /** EOVERFLOW (75): Value too large for defined data type. */
    public static final int EOVERFLOW = 75;
    /** EOPNOTSUPP (95): Operation not supported. */
    public static final int EOPNOTSUPP = 95;
    /** ETIMEDOUT (110): Connection timed out. */
    public static final int ETIMEDOUT = 110;
    /** EALREADY (114): Operation already in progress. */
    public static final int EALREADY = 114;
    /** EINPROGRESS (115): Operation now in progress. */
    public static final int EINPROGRESS = 115;
    /** EDQUOT (122): Disk quota exceeded. */
    public static final int EDQUOT = 122;
    /** ECANCELED (125): Operation canceled. */
    public static final int ECANCELED = 125;

    private static final String[] NAMES = new String[126];

    static {
        NAMES[EPERM] = "EPERM";
        NAMES[ENOENT] = "ENOENT";
        NAMES[3] = "ESRCH";
        NAMES[EINTR] = "EINTR";
        NAMES[EIO] = "EIO";
        NAMES[ENXIO] = "ENXIO";
        NAMES[E2BIG] = "E2BIG";
        NAMES[8] = "ENOEXEC";
        NAMES[EBADF] = "EBADF";
        NAMES[10] = "ECHILD";
        NAMES[EAGAIN] = "EAGAIN";
        NAMES[ENOMEM] = "ENOMEM";
        NAMES[EACCES] = "EACCES";
        NAMES[EFAULT] = "EFAULT";
        NAMES[15] = "ENOTBLK";
        NAMES[EBUSY] = "EBUSY";
        NAMES[EEXIST] = "EEXIST";
        NAMES[EXDEV] = "EXDEV";
        NAMES[ENODEV] = "ENODEV";
        NAMES[ENOTDIR] = "ENOTDIR";
        NAMES[EISDIR] = "EISDIR";
        NAMES[EINVAL] = "EINVAL";
        NAMES[ENFILE] = "ENFILE";
        NAMES[EMFILE] = "EMFILE";
        NAMES[ENOTTY] = "ENOTTY";
        NAMES[26] = "ETXTBSY";
        NAMES[EFBIG] = "EFBIG";
        NAMES[ENOSPC] = "ENOSPC";
        NAMES[ESPIPE] = "ESPIPE";
        NAMES[EROFS] = "EROFS";
        NAMES[31] = "EMLINK";
        NAMES[EPIPE] = "EPIPE";
        NAMES[33] = "EDOM";
        NAMES[ERANGE] = "ERANGE";
        NAMES[35] = "EDEADLK";
        NAMES[ENAMETOOLONG] = "ENAMETOOLONG";
        NAMES[37] = "ENOLCK";
        NAMES[ENOSYS] = "ENOSYS";
        NAMES[ENOTEMPTY] = "ENOTEMPTY";
        NAMES[ELOOP] = "ELOOP";
        NAMES[ENODATA] = "ENODATA";
        NAMES[EOVERFLOW] = "EOVERFLOW";
        NAMES[EOPNOTSUPP] = "EOPNOTSUPP";
        NAMES[ETIMEDOUT] = "ETIMEDOUT";
        NAMES[EALREADY] = "EALREADY";
        NAMES[EINPROGRESS] = "EINPROGRESS";
        NAMES[EDQUOT] = "EDQUOT";
        NAMES[ECANCELED] = "ECANCELED";
    }

    private Errno() {
    }

    /**
     * The symbolic name ("EFAULT"), or "errno N" for a number this table does not know.
     *
     * @param errno an errno value, positive or negated
     * @return the name, e.g. "EFAULT"
     */
    public static String name(int errno) {
        int e = Math.abs(errno);
        String n = e < NAMES.length ? NAMES[e] : null;
        return n != null ? n : "errno " + e;
    }

    /**
     * The C library's text for errno ("Permission denied"); "" when it cannot be had.
     *
     * @param errno an errno value, positive or negated
     * @return strerror's text, or ""
     */
    public static String text(int errno) {
        return LibcMemory.strerror(Math.abs(errno));
    }

    /**
     * The errno behind an I/O exception from java.nio, where it can be told: the JDK turns
     * EACCES, ENOENT, EEXIST (and, per call, ENOTDIR, ENOTEMPTY, ELOOP, EXDEV) into subclasses
     * of {@link FileSystemException} and keeps only strerror's text of every other errno (as the
     * reason, or as the whole message of a plain IOException from a channel's read or write).
     * That text is matched back to its number, so ENOSPC, EROFS, EISDIR, EIO... are recovered
     * too. Empty for an exception that does not come from a failed system call.
     *
     * @param e the exception to examine
     * @return the errno, or empty when it cannot be told
     */
    public static OptionalInt of(IOException e) {
        if (e instanceof FileOperationException f) {
            return OptionalInt.of(f.errno());
        }
        if (e instanceof AccessDeniedException) {
            return OptionalInt.of(EACCES);
        }
        if (e instanceof NoSuchFileException) {
            return OptionalInt.of(ENOENT);
        }
        if (e instanceof FileAlreadyExistsException) {
            return OptionalInt.of(EEXIST);
        }
        if (e instanceof NotDirectoryException) {
            return OptionalInt.of(ENOTDIR);
        }
        if (e instanceof DirectoryNotEmptyException) {
            return OptionalInt.of(ENOTEMPTY);
        }
        if (e instanceof FileSystemLoopException) {
            return OptionalInt.of(ELOOP);
        }
        if (e instanceof NotLinkException) {
            return OptionalInt.of(EINVAL);
        }
        if (e instanceof AtomicMoveNotSupportedException) {
            return OptionalInt.of(EXDEV);
        }
        String text = e instanceof FileSystemException f ? f.getReason() : e.getMessage();
        if (text == null || text.isEmpty()) {
            return OptionalInt.empty();
        }
        // The JDK adds this suffix for ELOOP alone (UnixException.translateToIOException). The
        // text before it cannot be trusted: run from the CLI's AOT cache, JDK 25 put "No such
        // file or directory" there for a symlink loop.
        if (text.endsWith(" or unable to access attributes of symbolic link")) {
            return OptionalInt.of(ELOOP);
        }
        Integer n = ByText.MAP.get(text);
        return n == null ? OptionalInt.empty() : OptionalInt.of(n);
    }

    /** strerror's text to errno, built on first use (it asks libc for each number once). */
    private static final class ByText {
        static final Map<String, Integer> MAP = build();

        private static Map<String, Integer> build() {
            Map<String, Integer> m = new HashMap<>();
            for (int e = 1; e < 134; e++) {
                String t = LibcMemory.strerror(e);
                // glibc answers "Unknown error N" for gaps; such text identifies nothing
                if (!t.isEmpty() && !t.startsWith("Unknown error")) {
                    m.putIfAbsent(t, e);
                }
            }
            return Map.copyOf(m);
        }
    }
}
