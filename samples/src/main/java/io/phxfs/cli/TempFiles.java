package io.phxfs.cli;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the CLI creates only for itself or has not finished (warm-up models, half-written bench
 * files, a gen-model run's files, kv bench's work directory): its owner deletes it in a finally
 * block, and a shutdown hook deletes whatever is still listed when the JVM ends first, on Ctrl-C
 * (SIGINT, SIGTERM) or System.exit while a daemon thread is still writing. Cached bench files
 * and finished models are not listed: they are kept on purpose.
 *
 * <p>The hook first interrupts every thread still writing a listed path (a FileChannel then
 * closes and the writer stops creating files), then deletes in the order the paths were listed,
 * directories last: a writer renames "x.tmp" to "x" only while "x.tmp" exists, so deleting the
 * temporary before its final name leaves neither, whenever the rename happens.
 */
final class TempFiles {
    private static final long WRITER_WAIT_MILLIS = 2000;
    /** Path to the thread that may still be creating files under it, in the order listed. */
    private static final Map<Path, Thread> LIVE = java.util.Collections.synchronizedMap(new java.util.LinkedHashMap<>());
    /**
     * Directories the command made for what it writes, removed at exit only when empty by then
     * (after everything in {@link #LIVE}): another process may have put its own files there.
     * Guarded by {@link #LIVE}.
     */
    private static final Map<Path, Thread> MADE = new java.util.LinkedHashMap<>();
    private static volatile boolean exiting;
    /** The exit hook has taken the list: guarded by {@link #LIVE}. */
    private static boolean listTaken;

    static {
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("phoenix-temp-cleanup").unstarted(TempFiles::deleteAll));
    }

    private TempFiles() {}

    /** A new directory under java.io.tmpdir, listed for deletion at exit until {@link #delete}d. */
    static Path createDirectory(String prefix) throws IOException {
        // under the list's lock: a directory made after the exit hook took its list would be
        // left behind (the warm-up starts with the command line, so Ctrl-C can come first)
        synchronized (LIVE) {
            if (listTaken) {
                throw new IOException("the JVM is exiting: no new temporary directory");
            }
            Path dir = Files.createTempDirectory(prefix);
            LIVE.put(dir, Thread.currentThread());
            return dir;
        }
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

    /**
     * Lists a directory the command made, to be removed at exit if nothing is left in it: never
     * recursively, since files others put there meanwhile are not the command's to delete.
     * Directories listed so are removed in the order listed, after every {@link #track}ed path.
     */
    static Path trackMadeDirectory(Path dir, Thread writer) {
        synchronized (LIVE) {
            MADE.put(dir, writer);
        }
        return dir;
    }

    /**
     * {@link Files#createDirectories}, listing each directory it made with {@link
     * #trackMadeDirectory} (innermost first), so that an interrupted command removes those left empty.
     *
     * @return the directories made, innermost first (empty when {@code dir} existed)
     */
    static List<Path> createDirectories(Path dir, Thread writer) throws IOException {
        Path made = null;
        for (Path p = dir.toAbsolutePath(); p != null && !Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS); p = p.getParent()) {
            made = p;
        }
        List<Path> out = new ArrayList<>();
        for (Path p = dir.toAbsolutePath(); made != null && p != null && p.startsWith(made); p = p.getParent()) {
            out.add(trackMadeDirectory(p, writer));
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException | RuntimeException e) {
            removeMade(out);
            throw e;
        }
        return out;
    }

    /** The directories a command made, innermost first, each removed if empty, and no longer listed. */
    static void removeMade(List<Path> made) {
        for (Path d : made) {
            removeIfEmpty(d);
            untrack(d);
        }
    }

    /** Stops listing {@code path}: it is kept on purpose (a completed bench file renamed into place). */
    static void untrack(Path path) {
        synchronized (LIVE) {
            LIVE.remove(path);
            MADE.remove(path);
        }
    }

    /** Deletes {@code path} with everything under it, now, and stops listing it; never throws. */
    static boolean delete(Path path) {
        boolean ok = deleteTree(path);
        if (ok) {
            LIVE.remove(path);
        }
        return ok;
    }

    /** Whether the JVM is ending with listed paths still live (Ctrl-C): errors that follow are its echo. */
    static boolean exiting() {
        return exiting;
    }

    private static void deleteAll() {
        List<Map.Entry<Path, Thread>> live;
        List<Map.Entry<Path, Thread>> made;
        synchronized (LIVE) {
            listTaken = true;
            live = new ArrayList<>(LIVE.entrySet());
            made = new ArrayList<>(MADE.entrySet());
        }
        if (live.isEmpty() && made.isEmpty()) {
            return;
        }
        Set<Thread> writers = new LinkedHashSet<>();
        live.forEach(e -> writers.add(e.getValue()));
        made.forEach(e -> writers.add(e.getValue()));
        // a command's own thread still writing means the JVM is ending under it (Ctrl-C, SIGTERM);
        // a daemon helper alone (the parser warm-up) is only a command that finished first
        if (writers.stream().anyMatch(w -> !w.isDaemon() && w.isAlive())) {
            exiting = true;
            // said here, not by the command: the JVM halts as soon as the hooks end, often before
            // the interrupted command gets as far as reporting anything
            System.err.println("phoenix: interrupted; removing what the command had not finished writing");
            System.err.flush();
        }
        for (Thread w : writers) {
            if (w != Thread.currentThread()) {
                w.interrupt();
            }
        }
        for (Thread writer : writers) {
            // only a daemon helper is waited for: the main thread is still inside the command (or
            // blocked in System.exit), and unlinking a file it writes is harmless (the data goes to
            // an orphaned inode)
            if (writer.isDaemon() && writer.isAlive()) {
                try {
                    writer.join(WRITER_WAIT_MILLIS);
                } catch (InterruptedException ignored) {
                    // delete what we can
                }
            }
        }
        List<Path> dirs = new ArrayList<>();
        for (Map.Entry<Path, Thread> e : live) {
            if (Files.isDirectory(e.getKey(), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                dirs.add(e.getKey());
            } else {
                deleteTree(e.getKey());
            }
        }
        // a directory that other threads of the command still write into (kv bench's I/O
        // threads) can gain a file between the walk and its rmdir: try again, briefly
        for (Path d : dirs) {
            for (int attempt = 0; attempt < 40 && (!deleteTree(d) || Files.exists(d, java.nio.file.LinkOption.NOFOLLOW_LINKS)); attempt++) {
                try {
                    Thread.sleep(25);
                } catch (InterruptedException e) {
                    break;
                }
            }
        }
        for (Map.Entry<Path, Thread> e : made) {
            removeIfEmpty(e.getKey());
        }
    }

    /** rmdir: a directory that is not empty (or is gone) stays as it is; never throws. */
    static void removeIfEmpty(Path dir) {
        try {
            if (Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                Files.deleteIfExists(dir);
            }
        } catch (IOException | RuntimeException notEmpty) {
            // someone else's files are in it: it stays
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
