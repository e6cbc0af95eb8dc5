package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk tier's files are private (security-1): the directory is created 0700 and chunk
 * files 0600 whatever the umask, and a directory another user owns, or that group or others
 * can write, is refused with a message naming it, its owner and mode, and the fix.
 */
class DiskTierPermissionsTest {
    private static final KvLayout L = KvLayout.preset("tiny-llama");
    private static final long LEN = L.bytesPerChunk(256);
    private static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> PRIVATE_FILE = PosixFilePermissions.fromString("rw-------");

    @TempDir
    Path tmp;

    private static CacheKey key(int i) {
        return new CacheKey("m", 1, 0, "%064x".formatted(i), "bfloat16", Map.of());
    }

    private static void put(DiskTier d, int i) {
        try (RegisteredBuffer b = TestData.PHX.host().allocate(LEN)) {
            TestData.fill(b.segment().orElseThrow(), i);
            assertTrue(d.put(key(i), L, 256, b.segment().orElseThrow()));
        }
    }

    private static boolean isRoot() throws IOException {
        return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0;
    }

    private static void assertPrivate(Path cache) throws IOException {
        assertEquals(PRIVATE_DIR, Files.getPosixFilePermissions(cache), cache.toString());
        List<Path> files;
        try (Stream<Path> s = Files.list(cache)) {
            files = s.toList();
        }
        assertTrue(files.size() >= 3, "chunk files in " + cache + ": " + files);
        for (Path f : files) {
            assertEquals(PRIVATE_FILE, Files.getPosixFilePermissions(f), f.toString());
        }
    }

    /** The child JVM's exit status and output (stdout and stderr). */
    private record Run(int status, String out) {
    }

    private Run child(List<String> prefix, String... args) throws Exception {
        return childWith(prefix, System.getProperty("java.class.path"), args);
    }

    private Run childWith(List<String> prefix, String classPath, String... args) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(prefix);
        cmd.addAll(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", classPath, Child.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child timed out: " + out);
        return new Run(p.exitValue(), out);
    }

    @Test
    void directoryAndChunkFilesArePrivateInProcess() throws Exception {
        Path cache = tmp.resolve("a/b/cache");
        try (DiskTier d = new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.FILE)) {
            for (int i = 0; i < 3; i++) {
                put(d, i);
            }
        }
        assertPrivate(cache);
        // reopened (an existing private directory is accepted) and written again: still private
        try (DiskTier d = new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            put(d, 7);
        }
        assertPrivate(cache);
    }

    @Test
    void directoryAndChunkFilesArePrivateUnderUmask000() throws Exception {
        // a JVM whose umask is 000: what it creates without a mode of its own is 0666/0777
        Path cache = tmp.resolve("umask0/cache");
        Run r = child(List.of("sh", "-c", "umask 000 && exec \"$0\" \"$@\""), "store", cache.toString());
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("probe rw-rw-rw-"), "the child's umask was not 000: " + r.out());
        assertPrivate(cache);
    }

    @Test
    void directoryOfAnotherUserIsRefused() throws Exception {
        Assumptions.assumeTrue(isRoot(), "chown to another uid needs root");
        Path cache = Files.createDirectory(tmp.resolve("theirs"), PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
        Files.setAttribute(cache, "unix:uid", 65534);
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE).close());
        String m = e.getMessage();
        assertTrue(m.contains(cache.toString()), m);
        assertTrue(m.contains("owned by uid 65534"), m);
        assertTrue(m.contains("rwx------ (0700)"), m);
        assertTrue(m.contains("chown"), m);
        try (Stream<Path> s = Files.list(cache)) {
            assertEquals(0, s.count(), "nothing may be written into a refused directory");
        }
    }

    @Test
    void directoryWritableByOthersIsRefused() throws Exception {
        for (String mode : List.of("rwxrwxrwx", "rwxrwx---", "rwx-w--wx")) {
            Path cache = Files.createDirectory(tmp.resolve("open-" + mode.replace('-', '_')));
            Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString(mode));
            UncheckedIOException e = assertThrows(UncheckedIOException.class,
                    () -> new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE).close());
            String m = e.getMessage();
            assertTrue(m.contains(cache.toString()), m);
            assertTrue(m.contains(mode), m);
            assertTrue(m.contains("chmod 700 " + cache), m);
            if (mode.equals("rwxrwxrwx")) {
                assertTrue(m.contains("(0777)"), m);
            }
        }
        // group- and world-readable but not writable: allowed (the files themselves are 0600)
        Path readable = Files.createDirectory(tmp.resolve("readable"));
        Files.setPosixFilePermissions(readable, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (DiskTier d = new DiskTier(readable, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            put(d, 1);
        }
    }

    @Test
    void unprivilegedUserGetsAClearErrorForADirectoryItCannotWrite() throws Exception {
        Assumptions.assumeTrue(isRoot(), "runs the tier as 'nobody' through setpriv, which needs root");
        List<String> asNobody = List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        // root's private directory, and a directory to be created under it
        Path rootsDir = Files.createDirectory(tmp.resolve("roots"), PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
        Files.setPosixFilePermissions(rootsDir, PosixFilePermissions.fromString("rwxr-xr-x"));
        String cp = readableClassPath(tmp.resolve("classpath"));
        Run owned = childWith(asNobody, cp, "open", rootsDir.toString());
        Assumptions.assumeTrue(owned.out().contains("child started"),
                "the build's classes cannot be read by 'nobody' here: " + owned.out());
        assertEquals(3, owned.status(), owned.out());
        assertTrue(owned.out().contains(rootsDir + ": owned by uid 0"), owned.out());
        Run create = childWith(asNobody, cp, "open", rootsDir.resolve("sub/cache").toString());
        assertEquals(3, create.status(), create.out());
        assertTrue(create.out().contains("cannot create it: permission denied"), create.out());
        assertTrue(create.out().contains("uid 65534"), create.out());
        // its own directory, but read-only
        Path ro = Files.createDirectory(tmp.resolve("ro"));
        Files.setAttribute(ro, "unix:uid", 65534);
        Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("r-x------"));
        Run notWritable = childWith(asNobody, cp, "open", ro.toString());
        assertEquals(3, notWritable.status(), notWritable.out());
        assertTrue(notWritable.out().contains("not writable by this process"), notWritable.out());
    }

    @Test
    void anotherUsersIntactChunksAreUnreadableNotDamaged() throws Exception {
        Assumptions.assumeTrue(isRoot(), "reads root's cache as 'nobody' through setpriv, which needs root");
        List<String> asNobody = List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path cache = tmp.resolve("cache");
        try (DiskTier d = new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            for (int i = 0; i < 3; i++) {
                put(d, i);
            }
        }
        String cp = readableClassPath(tmp.resolve("classpath"));
        // the directory listable by others, the chunk files 0600: before, 3 "damaged" files
        Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString("rwxr-xr-x"));
        Run listable = childWith(asNobody, cp, "stats", cache.toString());
        Assumptions.assumeTrue(listable.out().contains("child started"),
                "the build's classes cannot be read by 'nobody' here: " + listable.out());
        assertEquals(0, listable.status(), listable.out());
        assertTrue(listable.out().contains("chunks 0 corrupt 0 unreadable 3"), listable.out());
        // not listable: the reason, not the bare path
        Files.setPosixFilePermissions(cache, PRIVATE_DIR);
        Run hidden = childWith(asNobody, cp, "stats", cache.toString());
        assertEquals(3, hidden.status(), hidden.out());
        assertTrue(hidden.out().contains(cache + ": cannot list: permission denied"), hidden.out());
        assertFalse(hidden.out().contains("local_disk"), "stats names the directory it was given, not a setting: " + hidden.out());
        // not even reachable: permission denied, not "no such directory"
        Run below = childWith(asNobody, cp, "stats", cache.resolve("sub").toString());
        assertEquals(3, below.status(), below.out());
        assertTrue(below.out().contains(cache.resolve("sub") + ": permission denied"), below.out());
        try (DiskTier d = new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
            assertEquals(3, d.stats().entries(), "the owner still has them all");
        }
    }

    /** The test's class path copied under {@code to}, readable by everyone (the build's may lie under /root). */
    private static String readableClassPath(Path to) throws IOException {
        Set<PosixFilePermission> dirMode = PosixFilePermissions.fromString("rwxr-xr-x");
        Set<PosixFilePermission> fileMode = PosixFilePermissions.fromString("rw-r--r--");
        Files.createDirectories(to);
        Files.setPosixFilePermissions(to, dirMode);
        List<String> entries = new ArrayList<>();
        int i = 0;
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path src = Path.of(e);
            if (!Files.exists(src)) {
                continue;
            }
            Path dst = to.resolve(i++ + "-" + src.getFileName());
            try (Stream<Path> walk = Files.walk(src)) {
                for (Path p : (Iterable<Path>) walk::iterator) {
                    Path d = dst.resolve(src.relativize(p).toString());
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(d);
                        Files.setPosixFilePermissions(d, dirMode);
                    } else {
                        Files.copy(p, d);
                        Files.setPosixFilePermissions(d, fileMode);
                    }
                }
            }
            entries.add(dst.toString());
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    /** The child JVM: {@code store DIR} (prints a probe file's mode, stores 3 chunks) or {@code open DIR}. */
    public static final class Child {
        private Child() {
        }

        public static void main(String[] args) throws Exception {
            Class.forName("io.phxfs.core.PhoenixException"); // the whole class path is readable
            System.out.println("child started");
            Path cache = Path.of(args[1]);
            try {
                if (args[0].equals("store")) {
                    Files.createDirectories(cache.getParent());
                    Path probe = Files.createFile(cache.getParent().resolve("probe"));
                    System.out.println("probe " + PosixFilePermissions.toString(Files.getPosixFilePermissions(probe)));
                    try (DiskTier d = new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE)) {
                        for (int i = 0; i < 3; i++) {
                            put(d, i);
                        }
                    }
                } else if (args[0].equals("stats")) {
                    try (DiskTier d = DiskTier.openReadOnly(cache)) {
                        System.out.println("chunks " + d.stats().entries() + " corrupt " + d.stats().corrupt()
                                + " unreadable " + d.unreadableFiles());
                    }
                } else {
                    new DiskTier(cache, 1 << 30, 0, DiskTier.FsyncPolicy.NONE).close();
                }
            } catch (UncheckedIOException | IllegalArgumentException e) {
                System.out.println(e.getMessage());
                System.exit(3);
            }
            System.exit(0);
        }
    }
}
