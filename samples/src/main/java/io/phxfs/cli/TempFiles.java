package io.phxfs.cli;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the CLI creates only for itself (warm-up models, half-written bench files): its
 * owner deletes it in a finally block, and a shutdown hook deletes whatever is still listed
 * when the JVM ends first, on Ctrl-C (SIGINT, SIGTERM) or System.exit while a daemon thread
 * is still writing. Cached bench files are not listed: they are kept on purpose, and
 * {@code phoenix bench --clean} removes them.
 */
final class TempFiles {
    private static final long WRITER_WAIT_MILLIS = 2000;
    /** Path to the thread that may still be creating files under it. */
    private static final Map<Path, Thread> LIVE = new ConcurrentHashMap<>();

    static {
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("phoenix-temp-cleanup").unstarted(TempFiles::deleteAll));
    }

    private TempFiles() {}

    /** A new directory under java.io.tmpdir, listed for deletion at exit until {@link #delete}d. */
    static Path createDirectory(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        LIVE.put(dir, Thread.currentThread());
        return dir;
    }

    /**
     * Lists {@code path} for deletion at exit, and {@code writer} as the thread that may still
     * create entries under it: the hook waits briefly for that thread, since a directory
     * emptied while a file is being created in it would be left behind.
     */
    static Path track(Path path, Thread writer) {
        LIVE.put(path, writer);
        return path;
    }

    /** Stops listing {@code path}: it is kept on purpose (a completed bench file renamed into place). */
    static void untrack(Path path) {
        LIVE.remove(path);
    }

    /** Deletes {@code path} with everything under it, now, and stops listing it; never throws. */
    static boolean delete(Path path) {
        boolean ok = deleteTree(path);
        if (ok) {
            LIVE.remove(path);
        }
        return ok;
    }

    private static void deleteAll() {
        for (Map.Entry<Path, Thread> e : LIVE.entrySet()) {
            Thread writer = e.getValue();
            // only a daemon helper is waited for: the main thread is still inside the command,
            // and unlinking a file it writes is harmless (the data goes to an orphaned inode)
            if (writer.isDaemon() && writer.isAlive()) {
                try {
                    writer.join(WRITER_WAIT_MILLIS);
                } catch (InterruptedException ignored) {
                    // delete what we can
                }
            }
            deleteTree(e.getKey());
        }
    }

    static boolean deleteTree(Path root) {
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
            return true;
        } catch (NoSuchFileException e) {
            return true;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
