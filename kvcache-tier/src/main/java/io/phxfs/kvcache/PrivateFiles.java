package io.phxfs.kvcache;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The disk tier's directory and chunk files, private to this process's user: whoever can write
 * into the directory can plant chunks that the tier then serves as KV cache.
 */
final class PrivateFiles {
    /** The cache directory's mode when the tier creates it, whatever the umask. */
    static final Set<PosixFilePermission> DIR_MODE = PosixFilePermissions.fromString("rwx------");
    /** Every chunk file's mode from its creation on, whatever the umask. */
    static final Set<PosixFilePermission> FILE_MODE = PosixFilePermissions.fromString("rw-------");

    private PrivateFiles() {
    }

    /**
     * Creates the cache directory 0700 (parents as the umask says) when it is missing, and
     * refuses one that another user owns or that group or others can write: anyone who can
     * write there can plant or swap chunk files that this process then serves as KV cache, and
     * a directory of another user's can be emptied or read by them. The messages (without the
     * "local_disk DIR: " prefix the constructor adds) name the owner, the mode and the fix.
     */
    static void preparePrivateDirectory(Path dir) throws IOException {
        long me = processUid();
        if (!Files.exists(dir)) {
            Path parent = dir.toAbsolutePath().getParent();
            try {
                if (parent != null) {
                    Files.createDirectories(parent);
                }
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(DIR_MODE));
                Files.setPosixFilePermissions(dir, DIR_MODE); /* a umask like 0277 takes bits from 0700 too */
            } catch (FileAlreadyExistsException raced) {
                // created meanwhile (another tier of this process, or someone else): checked below
            } catch (AccessDeniedException e) {
                throw new IOException("cannot create it: permission denied on " + e.getFile() + " (this process runs as uid "
                        + me + "); create the directory for this user (mode 0700) or point local_disk at one it can write", e);
            }
        }
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class);
        if (!a.isDirectory()) {
            throw new IOException("not a directory");
        }
        Object owner = Files.getAttribute(dir, "unix:uid");
        String mode = PosixFilePermissions.toString(a.permissions()) + " (" + octal(a.permissions()) + ")";
        if (me >= 0 && owner instanceof Integer uid && uid != me) {
            throw new IOException("owned by uid " + uid + " (" + a.owner().getName() + "), mode " + mode
                    + ", not by this process's uid " + me + ": another user could read, replace or delete the cached"
                    + " chunks. Use a directory owned by this user (chown it, or point local_disk elsewhere)");
        }
        if (a.permissions().contains(PosixFilePermission.GROUP_WRITE) || a.permissions().contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new IOException("mode " + mode + " lets group or others write into it (owner " + a.owner().getName()
                    + "), so they could plant or swap cached chunks. Run 'chmod 700 " + dir + "' or point local_disk elsewhere");
        }
        if (!Files.isWritable(dir) || !Files.isExecutable(dir)) {
            throw new IOException("not writable by this process (uid " + me + "; owner " + a.owner().getName() + ", mode " + mode
                    + "). Give the owner rwx ('chmod 700 " + dir + "') or point local_disk at a directory this user can write");
        }
    }

    /** This process's effective uid (the owner of /proc/self on Linux), or -1 when unknown. */
    private static long processUid() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static String octal(Set<PosixFilePermission> perms) {
        int m = 0;
        for (PosixFilePermission p : perms) {
            m |= 1 << (8 - p.ordinal());
        }
        return String.format("%04o", m);
    }

    /**
     * Creates a chunk's temporary file 0600 before libphoenix opens it: PhxFile.open creates
     * with 0644 less the umask and takes no mode, so the file is made here, never broader than
     * 0600 (the creation mode) and set to exactly 0600 before any byte is written; PhxFile then
     * opens the existing file (O_CREAT without effect, O_TRUNC empties a leftover).
     */
    static void createPrivateFile(Path p) throws IOException {
        try {
            Files.createFile(p, PosixFilePermissions.asFileAttribute(FILE_MODE));
        } catch (FileAlreadyExistsException e) {
            // a leftover of an earlier process with this pid: truncated by the open
        }
        Files.setPosixFilePermissions(p, FILE_MODE);
    }
}
