package io.phxfs.safetensors.s3;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.WatchService;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;

/**
 * The objects of one S3-compatible endpoint (with one set of credentials) as a read-only file
 * system, so that the loader's own locate, index and header code reads a model from a bucket
 * as it reads one from a directory: {@code s3://bucket/prefix/} is a directory, its objects
 * files. Paths are {@code s3://bucket/key}; {@link #getPath} also takes {@code /bucket/key}.
 *
 * <p>What a load learns of an object (its size and entity tag from a listing or its first
 * GET, and that GET's first {@link S3Settings#headerPrefetchBytes()} bytes, which hold the
 * header) is kept for {@value #TTL_SECONDS} s, so that locating a model, checking an index's
 * shards and parsing their headers cost one LIST and one GET per file. The data reads check
 * the object against it (If-Match on the entity tag, the total size of every answer): an
 * object replaced meanwhile fails the load instead of mixing two versions.
 *
 * <p>The caller of {@link #open} owns the file system and closes it (a second close does
 * nothing); the ones {@code Path.of(URI)} makes from the environment belong to the provider.
 */
public final class S3FileSystem extends FileSystem {
    static final long TTL_SECONDS = 10;
    private static final long TTL_NANOS = TTL_SECONDS * 1_000_000_000L;
    /** Pages of 1,000 keys listed for a directory before the rest is left to per-object requests. */
    private static final int LIST_PAGES = 10;

    /** What is known of one key: its object (null: no such object), and its first bytes when fetched. */
    record Meta(S3Client.ObjectInfo info, byte[] prefix, long at) {
        boolean fresh() {
            return System.nanoTime() - at < TTL_NANOS;
        }
    }

    /** A directory's listing: its objects' keys and its sub-prefixes, complete unless truncated. */
    record Dir(List<S3Client.Entry> objects, List<String> prefixes, boolean complete, long at) {
        boolean fresh() {
            return System.nanoTime() - at < TTL_NANOS;
        }

        boolean empty() {
            return objects.isEmpty() && prefixes.isEmpty();
        }
    }

    private final S3FileSystemProvider provider;
    private final S3Settings settings;
    private final S3Client client;
    private final ConcurrentHashMap<String, Meta> objects = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Dir> dirs = new ConcurrentHashMap<>();
    private volatile boolean open = true;

    S3FileSystem(S3FileSystemProvider provider, S3Settings settings) {
        this.provider = provider;
        this.settings = settings;
        this.client = new S3Client(settings);
    }

    /**
     * A file system over the endpoint and credentials of {@code settings}; the caller closes it.
     *
     * @param settings where and how to read
     * @return a new file system
     */
    public static S3FileSystem open(S3Settings settings) {
        return new S3FileSystem(S3FileSystemProvider.instance(), settings);
    }

    /**
     * The path of an {@code s3://bucket/key} URL, the key taken literally.
     *
     * @param url an {@code s3://} URL; a trailing '/' names a directory (a prefix)
     * @return the path
     * @throws IllegalArgumentException when it is no s3:// URL or the bucket name is invalid
     */
    public Path path(String url) {
        return S3Path.parse(this, url);
    }

    /**
     * The settings this file system reads with.
     *
     * @return the settings
     */
    public S3Settings settings() {
        return settings;
    }

    S3Client client() {
        checkOpen();
        return client;
    }

    private void checkOpen() {
        if (!open) {
            throw new java.nio.file.ClosedFileSystemException();
        }
    }

    private static String id(String bucket, String key) {
        return bucket + "/" + key;
    }

    /** What the loader's stat of {@code p} sees: a directory, an object, or nothing (NoSuchFileException). */
    S3Attributes attributes(S3Path p) throws IOException {
        checkOpen();
        if (p.bucket() == null) {
            return S3Attributes.directory(p);
        }
        String key = p.key();
        if (key.isEmpty()) {
            list(p.bucket(), ""); // NoSuchBucket, AccessDenied... surface here
            return S3Attributes.directory(p);
        }
        if (p.directoryHint()) {
            return directoryOrMissing(p);
        }
        Meta m = objects.get(id(p.bucket(), key));
        if (m != null && m.fresh() && m.info() != null) {
            return S3Attributes.object(p, m.info());
        }
        Dir parent = dirs.get(id(p.bucket(), parentPrefix(key)));
        if (parent != null && parent.fresh() && parent.complete()) {
            for (S3Client.Entry e : parent.objects()) {
                if (e.key().equals(key)) {
                    return S3Attributes.object(p, new S3Client.ObjectInfo(e.size(), e.etag()));
                }
            }
            if (parent.prefixes().contains(key + "/")) {
                return S3Attributes.directory(p);
            }
            throw new NoSuchFileException(null, null, p + ": no such key (not in the listing of "
                    + p.getParent() + "/)");
        }
        try {
            return S3Attributes.object(p, prefix(p).info());
        } catch (NoSuchFileException e) {
            // no object of that name: a prefix, perhaps, as s3://b/model names the directory s3://b/model/
            return directoryOrMissing(p);
        }
    }

    private S3Attributes directoryOrMissing(S3Path p) throws IOException {
        Dir d = list(p.bucket(), p.key() + "/");
        if (d.empty()) {
            throw new NoSuchFileException(null, null, p + ": no object and no objects under " + p + "/");
        }
        return S3Attributes.directory(p);
    }

    private static String parentPrefix(String key) {
        int i = key.lastIndexOf('/');
        return i < 0 ? "" : key.substring(0, i + 1);
    }

    /** The listing of {@code prefix} (ending in '/', or "" for the bucket), cached. */
    Dir list(String bucket, String prefix) throws IOException {
        checkOpen();
        String id = id(bucket, prefix);
        Dir d = dirs.get(id);
        if (d != null && d.fresh()) {
            return d;
        }
        S3Client.Listing l = client.list(bucket, prefix, "/", 1000, LIST_PAGES);
        d = new Dir(l.objects(), l.commonPrefixes(), !l.truncated(), System.nanoTime());
        dirs.put(id, d);
        for (S3Client.Entry e : l.objects()) {
            String oid = id(bucket, e.key());
            Meta old = objects.get(oid);
            S3Client.ObjectInfo info = new S3Client.ObjectInfo(e.size(), e.etag());
            // keep fetched first bytes while they belong to the same object
            byte[] keep = old != null && old.prefix() != null && info.equals(old.info()) ? old.prefix() : null;
            objects.put(oid, new Meta(info, keep, System.nanoTime()));
        }
        return d;
    }

    /** The object's first bytes (one speculative GET, cached) with its size and entity tag. */
    S3Client.Prefix prefix(S3Path p) throws IOException {
        checkOpen();
        String id = id(p.bucket(), p.key());
        Meta m = objects.get(id);
        if (m != null && m.fresh() && m.prefix() != null) {
            return new S3Client.Prefix(m.info(), m.prefix());
        }
        S3Client.Prefix got = client.getPrefix(p.bucket(), p.key(), settings.headerPrefetchBytes());
        objects.put(id, new Meta(got.info(), got.bytes(), System.nanoTime()));
        return got;
    }

    /** The object's size and entity tag as the load knows them (no request when cached). */
    S3Client.ObjectInfo info(S3Path p) throws IOException {
        Meta m = objects.get(id(p.bucket(), p.key()));
        if (m != null && m.fresh() && m.info() != null) {
            return m.info();
        }
        return prefix(p).info();
    }

    /** Forgets what is known of the object (it changed, or failed). */
    void forget(S3Path p) {
        objects.remove(id(p.bucket(), p.key()));
        dirs.remove(id(p.bucket(), parentPrefix(p.key())));
    }

    /**
     * Fetches the first bytes of each of {@code paths} not yet known, up to the concurrency at
     * once, so that parsing their headers one after the other then costs no round trip each.
     * Failures are left for the parse to meet and report.
     */
    void prefetch(Collection<S3Path> paths) {
        List<S3Path> todo = new ArrayList<>();
        for (S3Path p : paths) {
            Meta m = objects.get(id(p.bucket(), p.key()));
            if (m == null || !m.fresh() || m.prefix() == null) {
                todo.add(p);
            }
        }
        if (todo.size() < 2) {
            return;
        }
        Semaphore slots = new Semaphore(settings.concurrency());
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> fs = new ArrayList<>();
            for (S3Path p : todo) {
                fs.add(pool.submit(() -> {
                    slots.acquire();
                    try {
                        return prefix(p);
                    } finally {
                        slots.release();
                    }
                }));
            }
        }
    }

    @Override
    public S3FileSystemProvider provider() {
        return provider;
    }

    /** Closes the HTTP client; paths of this file system then fail. A second call does nothing. */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        provider.forget(this);
        objects.clear();
        dirs.clear();
        client.close();
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isReadOnly() {
        return true;
    }

    @Override
    public String getSeparator() {
        return "/";
    }

    @Override
    public Iterable<Path> getRootDirectories() {
        return List.of(new S3Path(this, true, List.of(), true));
    }

    @Override
    public Iterable<FileStore> getFileStores() {
        return List.of();
    }

    @Override
    public Set<String> supportedFileAttributeViews() {
        return Set.of("basic");
    }

    /** {@code s3://bucket/key}, {@code /bucket/key} (absolute) or names joined by '/' (relative). */
    @Override
    public Path getPath(String first, String... more) {
        String s = more.length == 0 ? first : first + "/" + String.join("/", more);
        if (s.regionMatches(true, 0, "s3://", 0, 5)) {
            return S3Path.parse(this, s);
        }
        if (s.startsWith("/")) {
            return S3Path.parse(this, "s3://" + s.substring(1));
        }
        List<String> names = new ArrayList<>();
        for (String n : s.split("/")) {
            if (!n.isEmpty()) {
                names.add(n);
            }
        }
        return new S3Path(this, false, names, s.endsWith("/"));
    }

    @Override
    public PathMatcher getPathMatcher(String syntaxAndPattern) {
        PathMatcher local = java.nio.file.FileSystems.getDefault().getPathMatcher(syntaxAndPattern);
        // the patterns are about names: matched against the path's names joined by '/'
        return p -> local.matches(Path.of(p.isAbsolute() ? ((S3Path) p).key() : p.toString()));
    }

    @Override
    public UserPrincipalLookupService getUserPrincipalLookupService() {
        throw new UnsupportedOperationException("S3 objects have no owners here");
    }

    @Override
    public WatchService newWatchService() {
        throw new UnsupportedOperationException("S3 prefixes cannot be watched");
    }

    @Override
    public String toString() {
        return "S3FileSystem[" + settings + (open ? "" : ", closed") + "]";
    }
}
