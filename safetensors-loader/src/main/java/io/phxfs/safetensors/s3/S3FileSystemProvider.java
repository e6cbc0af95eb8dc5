package io.phxfs.safetensors.s3;

import java.io.IOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AccessMode;
import java.nio.file.CopyOption;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;
import java.nio.file.ReadOnlyFileSystemException;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileAttributeView;
import java.nio.file.attribute.FileTime;
import java.nio.file.spi.FileSystemProvider;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code s3} scheme of java.nio.file: {@code Path.of(URI.create("s3://bucket/prefix/"))}
 * is a path of the file system that {@link S3Settings#fromEnvironment()} describes (one per
 * distinct settings, kept by this provider for the life of the process). Read-only: objects
 * can be listed, stat'ed and read; anything that writes fails with ReadOnlyFileSystemException.
 */
public final class S3FileSystemProvider extends FileSystemProvider {
    private static volatile S3FileSystemProvider instance;
    private final Map<S3Settings, S3FileSystem> byEnvironment = new LinkedHashMap<>();

    /** Called by ServiceLoader when java.nio.file loads the installed providers. */
    public S3FileSystemProvider() {
        synchronized (S3FileSystemProvider.class) {
            if (instance == null) {
                instance = this;
            }
        }
    }

    /** The installed provider (the one java.nio.file uses), or this class's own when none is installed. */
    static S3FileSystemProvider instance() {
        S3FileSystemProvider p = instance;
        if (p != null) {
            return p;
        }
        for (FileSystemProvider installed : FileSystemProvider.installedProviders()) {
            if (installed instanceof S3FileSystemProvider s) {
                return s;
            }
        }
        return new S3FileSystemProvider();
    }

    /**
     * A path of an {@code s3://} URL, or of the default file system for anything else: what a
     * command line's model argument means.
     *
     * @param arg {@code s3://bucket/key} or a local path
     * @return the path
     */
    public static Path pathOf(String arg) {
        if (arg.regionMatches(true, 0, "s3://", 0, 5)) {
            return instance().environmentFileSystem().path(arg);
        }
        return Path.of(arg);
    }

    /**
     * Whether {@code p} names an S3 object or prefix.
     *
     * @param p any path
     * @return true for a path of an {@link S3FileSystem}
     */
    public static boolean isS3(Path p) {
        return p instanceof S3Path;
    }

    @Override
    public String getScheme() {
        return "s3";
    }

    /** The file system of the current environment's settings: re-read on each call, so that a changed AWS_PROFILE or property counts. */
    S3FileSystem environmentFileSystem() {
        S3Settings s = S3Settings.fromEnvironment();
        synchronized (byEnvironment) {
            S3FileSystem fs = byEnvironment.get(s);
            if (fs == null || !fs.isOpen()) {
                fs = new S3FileSystem(this, s);
                byEnvironment.put(s, fs);
            }
            return fs;
        }
    }

    void forget(S3FileSystem fs) {
        synchronized (byEnvironment) {
            byEnvironment.values().removeIf(f -> f == fs);
        }
    }

    /**
     * A file system of its own, with settings from {@code env}'s {@code "settings"} entry (an
     * {@link S3Settings}), or else from the environment; the caller closes it. The URI is
     * {@code s3:///} or any {@code s3://} URL: a file system spans all buckets of its endpoint.
     */
    @Override
    public FileSystem newFileSystem(URI uri, Map<String, ?> env) {
        checkScheme(uri);
        Object s = env.get("settings");
        if (s != null && !(s instanceof S3Settings)) {
            throw new IllegalArgumentException("env \"settings\" must be an S3Settings, was " + s.getClass().getName());
        }
        return new S3FileSystem(this, s == null ? S3Settings.fromEnvironment() : (S3Settings) s);
    }

    @Override
    public FileSystem getFileSystem(URI uri) {
        checkScheme(uri);
        return environmentFileSystem();
    }

    @Override
    public Path getPath(URI uri) {
        checkScheme(uri);
        String bucket = uri.getAuthority() == null ? "" : uri.getAuthority();
        String key = uri.getPath() == null ? "" : uri.getPath();
        return environmentFileSystem().path("s3://" + bucket + (key.startsWith("/") ? key : "/" + key));
    }

    private static void checkScheme(URI uri) {
        if (!"s3".equalsIgnoreCase(uri.getScheme())) {
            throw new IllegalArgumentException("not an s3:// URI: " + uri);
        }
    }

    private static S3Path s3(Path p) {
        if (!(p instanceof S3Path s)) {
            throw new ProviderMismatchException("not an S3 path: " + p);
        }
        return s;
    }

    @Override
    public SeekableByteChannel newByteChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attrs)
            throws IOException {
        return newFileChannel(path, options, attrs);
    }

    @Override
    public FileChannel newFileChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attrs)
            throws IOException {
        for (OpenOption o : options) {
            if (o != StandardOpenOption.READ && o != LinkOption.NOFOLLOW_LINKS) {
                throw new ReadOnlyFileSystemException();
            }
        }
        S3Path p = s3(path);
        if (p.bucket() == null || p.key().isEmpty() || p.directoryHint()) {
            throw new NoSuchFileException(null, null, p + ": a bucket or prefix, not an object");
        }
        return new S3FileChannel(p.getFileSystem(), p);
    }

    @Override
    public DirectoryStream<Path> newDirectoryStream(Path dir, DirectoryStream.Filter<? super Path> filter)
            throws IOException {
        S3Path d = s3(dir);
        if (d.bucket() == null) {
            throw new UnsupportedOperationException("listing the buckets of an endpoint is not supported");
        }
        S3Attributes a = d.getFileSystem().attributes(d);
        if (!a.isDirectory()) {
            throw new NotDirectoryException(d.toString());
        }
        String prefix = d.key().isEmpty() ? "" : d.key() + "/";
        S3FileSystem.Dir listing = d.getFileSystem().list(d.bucket(), prefix);
        List<Path> children = new ArrayList<>();
        for (S3Client.Entry e : listing.objects()) {
            String name = e.key().substring(prefix.length());
            if (!name.isEmpty() && !name.contains("/")) {
                children.add(d.resolve(name));
            }
        }
        for (String p : listing.prefixes()) {
            String name = p.substring(prefix.length()).replaceAll("/+$", "");
            if (!name.isEmpty() && !name.contains("/")) {
                children.add(d.resolve(name + "/"));
            }
        }
        List<Path> kept = new ArrayList<>();
        for (Path c : children) {
            if (filter == null || filter.accept(c)) {
                kept.add(c);
            }
        }
        return new DirectoryStream<>() {
            private boolean iterated;

            @Override
            public Iterator<Path> iterator() {
                if (iterated) {
                    throw new IllegalStateException("iterator() already called");
                }
                iterated = true;
                return kept.iterator();
            }

            @Override
            public void close() {
                // the listing is in memory
            }
        };
    }

    @Override
    public void createDirectory(Path dir, FileAttribute<?>... attrs) {
        throw new ReadOnlyFileSystemException();
    }

    @Override
    public void delete(Path path) {
        throw new ReadOnlyFileSystemException();
    }

    @Override
    public void copy(Path source, Path target, CopyOption... options) {
        throw new ReadOnlyFileSystemException();
    }

    @Override
    public void move(Path source, Path target, CopyOption... options) {
        throw new ReadOnlyFileSystemException();
    }

    @Override
    public boolean isSameFile(Path path, Path path2) {
        return path.equals(path2);
    }

    @Override
    public boolean isHidden(Path path) {
        return false;
    }

    @Override
    public FileStore getFileStore(Path path) {
        throw new UnsupportedOperationException("S3 has no file stores");
    }

    @Override
    public void checkAccess(Path path, AccessMode... modes) throws IOException {
        S3Path p = s3(path);
        S3Attributes a = p.getFileSystem().attributes(p);
        for (AccessMode m : modes) {
            if (m == AccessMode.WRITE) {
                throw new AccessDeniedException(p.toString(), null, "S3 paths are read-only here");
            }
            if (m == AccessMode.EXECUTE && !a.isDirectory()) {
                throw new AccessDeniedException(p.toString(), null, "an object is not executable");
            }
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <V extends FileAttributeView> V getFileAttributeView(Path path, Class<V> type, LinkOption... options) {
        if (type != BasicFileAttributeView.class) {
            return null;
        }
        S3Path p = s3(path);
        return (V) new BasicFileAttributeView() {
            @Override
            public String name() {
                return "basic";
            }

            @Override
            public BasicFileAttributes readAttributes() throws IOException {
                return p.getFileSystem().attributes(p);
            }

            @Override
            public void setTimes(FileTime lastModifiedTime, FileTime lastAccessTime, FileTime createTime) {
                throw new ReadOnlyFileSystemException();
            }
        };
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A extends BasicFileAttributes> A readAttributes(Path path, Class<A> type, LinkOption... options)
            throws IOException {
        if (!type.isAssignableFrom(S3Attributes.class)) {
            throw new UnsupportedOperationException(type.getSimpleName() + " of S3 objects: only BasicFileAttributes");
        }
        S3Path p = s3(path);
        return (A) p.getFileSystem().attributes(p);
    }

    @Override
    public Map<String, Object> readAttributes(Path path, String attributes, LinkOption... options) throws IOException {
        String view = attributes.contains(":") ? attributes.substring(0, attributes.indexOf(':')) : "basic";
        if (!view.equals("basic")) {
            throw new UnsupportedOperationException("only the basic attribute view: " + attributes);
        }
        S3Attributes a = readAttributes(path, S3Attributes.class, options);
        Map<String, Object> all = new LinkedHashMap<>();
        all.put("size", a.size());
        all.put("isDirectory", a.isDirectory());
        all.put("isRegularFile", a.isRegularFile());
        all.put("isSymbolicLink", false);
        all.put("isOther", false);
        all.put("lastModifiedTime", a.lastModifiedTime());
        all.put("lastAccessTime", a.lastAccessTime());
        all.put("creationTime", a.creationTime());
        all.put("fileKey", a.fileKey());
        String names = attributes.contains(":") ? attributes.substring(attributes.indexOf(':') + 1) : attributes;
        if (names.equals("*")) {
            return all;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (String n : names.split(",")) {
            if (all.containsKey(n)) {
                out.put(n, all.get(n));
            }
        }
        return out;
    }

    @Override
    public void setAttribute(Path path, String attribute, Object value, LinkOption... options) {
        throw new ReadOnlyFileSystemException();
    }

    @Override
    public String toString() {
        return "S3FileSystemProvider";
    }
}
