package io.phxfs.kvcache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A disk tier's hold on its directory: one writing tier per directory at a time, in this process
 * or any other. Two tiers on one directory would each delete the other's stores under way as
 * "leftover temporaries" when they open, evict each other's files and each keep the byte cap for
 * itself alone; the second one is refused instead, with a message naming the holder.
 *
 * <p>The hold is an exclusive lock on {@link #NAME} in the directory (0600, holding the holder's
 * pid, host and start time for that message): the kernel drops it when the process ends, however
 * it ends, so a SIGKILL leaves no stale hold. A directory this process holds is also kept in a set
 * of its own: a POSIX lock is the process's, and a second channel on the file closed in the same
 * process would drop it.
 */
final class DirectoryLock implements AutoCloseable {
    /** The lock file in the cache directory (neither a chunk nor a temporary: the index ignores it). */
    static final String NAME = ".phoenix-kv.lock";
    /** The directories this process holds, with the line its lock files hold. */
    private static final Map<Path, String> HELD_HERE = new ConcurrentHashMap<>();

    private final Path key;
    private final FileChannel channel;
    private final FileLock lock;

    private DirectoryLock(Path key, FileChannel channel, FileLock lock) {
        this.key = key;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes the directory for this tier.
     *
     * @throws IOException saying who holds it (the message goes after "local_disk DIR: ")
     */
    static DirectoryLock acquire(Path dir) throws IOException {
        Path key = dir.toRealPath();
        String me = describeThisProcess();
        if (HELD_HERE.putIfAbsent(key, me) != null) {
            throw new IOException("in use by another disk tier of this process (pid " + ProcessHandle.current().pid()
                    + "): close it first, or give each tier its own local_disk directory");
        }
        FileChannel ch = null;
        try {
            Path file = dir.resolve(NAME);
            PrivateFiles.createPrivateFile(file);
            ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock l;
            try {
                l = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                l = null;
            }
            if (l == null) {
                String who = read(ch);
                throw new IOException("in use by another process (" + (who.isEmpty() ? "holder unknown" : who) + "):"
                        + " two processes on one cache directory would delete each other's stores under way and each"
                        + " keep the byte cap for itself. Give each process its own local_disk directory, or stop that one");
            }
            ch.truncate(0);
            ch.write(ByteBuffer.wrap((me + "\n").getBytes(StandardCharsets.UTF_8)), 0);
            return new DirectoryLock(key, ch, l);
        } catch (IOException | RuntimeException | Error e) {
            HELD_HERE.remove(key);
            if (ch != null) {
                try {
                    ch.close();
                } catch (IOException c) {
                    e.addSuppressed(c);
                }
            }
            throw e;
        }
    }

    /**
     * Who holds {@code dir} now, for a reader that changes nothing ({@code phoenix kv stats}): the
     * holder's line, or null when no process holds it (or it cannot be told).
     */
    static String holder(Path dir) {
        Path file = dir.resolve(NAME);
        try {
            String here = HELD_HERE.get(dir.toRealPath());
            if (here != null) {
                return here;
            }
        } catch (IOException e) {
            return null;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            FileLock l;
            try {
                l = ch.tryLock(0, Long.MAX_VALUE, true);
            } catch (OverlappingFileLockException e) {
                l = null;
            }
            if (l != null) {
                l.release();
                return null;
            }
            String who = read(ch);
            return who.isEmpty() ? "holder unknown" : who;
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException e) {
            return null; // unreadable lock file: cannot tell
        }
    }

    private static String read(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(512);
        while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
            // the holder's one line
        }
        return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8).strip();
    }

    private static String describeThisProcess() {
        String host;
        try {
            host = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
        } catch (IOException | RuntimeException e) {
            host = "?";
        }
        return "pid " + ProcessHandle.current().pid() + " on " + host + ", since "
                + Instant.now().truncatedTo(ChronoUnit.SECONDS);
    }

    /** Releases the directory; a second call does nothing. */
    @Override
    public synchronized void close() {
        if (!channel.isOpen()) {
            return;
        }
        try {
            lock.release();
        } catch (IOException ignored) {
            // closing the channel drops it too
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
        HELD_HERE.remove(key);
    }
}
