package io.phxfs.safetensors.s3;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * An {@code s3://bucket/key} as a path: its first name is the bucket, the rest the key split
 * at '/'. An absolute path shows as its URL; a relative one (a file name, what an index lists)
 * as its names joined by '/'. A trailing '/' as given by the user ({@code s3://b/model/}) is
 * kept as a hint that a directory is meant, and takes no part in equality.
 */
final class S3Path implements Path {
    private final S3FileSystem fs;
    private final boolean absolute;
    private final List<String> names;
    private final boolean directoryHint;

    S3Path(S3FileSystem fs, boolean absolute, List<String> names, boolean directoryHint) {
        this.fs = fs;
        this.absolute = absolute;
        this.names = List.copyOf(names);
        this.directoryHint = directoryHint;
    }

    /**
     * Parses {@code s3://bucket/key} as written: the key is taken literally (no %-decoding, as
     * the AWS CLI takes it). Empty names ({@code a//b}) cannot be a path's and are refused.
     */
    static S3Path parse(S3FileSystem fs, String url) {
        if (!url.regionMatches(true, 0, "s3://", 0, 5)) {
            throw new IllegalArgumentException("'" + url + "' is not an s3:// URL");
        }
        String rest = url.substring(5);
        int slash = rest.indexOf('/');
        String bucket = slash < 0 ? rest : rest.substring(0, slash);
        String key = slash < 0 ? "" : rest.substring(slash + 1);
        checkBucket(bucket, url);
        List<String> names = new ArrayList<>();
        names.add(bucket);
        boolean dir = key.isEmpty() || key.endsWith("/");
        String trimmed = key.endsWith("/") ? key.substring(0, key.length() - 1) : key;
        if (!trimmed.isEmpty()) {
            for (String n : trimmed.split("/", -1)) {
                if (n.isEmpty()) {
                    throw new IllegalArgumentException(url + ": the key has an empty path segment ('//'), which"
                            + " this loader cannot name");
                }
                names.add(n);
            }
        }
        return new S3Path(fs, true, names, dir);
    }

    /** Bucket names by S3's rules (3-63 of a-z, 0-9, '.', '-'), so that a typo fails here, not at the server. */
    static void checkBucket(String bucket, String url) {
        if (bucket.isEmpty()) {
            throw new IllegalArgumentException(url + ": no bucket (expected s3://BUCKET/PREFIX/)");
        }
        if (bucket.length() < 3 || bucket.length() > 63 || !bucket.matches("[a-z0-9][a-z0-9.\\-_]*[a-z0-9]")) {
            throw new IllegalArgumentException(url + ": '" + bucket + "' is not a valid bucket name (3-63 lower-case"
                    + " letters, digits, '.' and '-')");
        }
    }

    /** The bucket; null for the root or a relative path. */
    String bucket() {
        return absolute && !names.isEmpty() ? names.get(0) : null;
    }

    /** The key (names after the bucket joined by '/'); "" for a bucket itself. */
    String key() {
        if (!absolute || names.size() <= 1) {
            return "";
        }
        return String.join("/", names.subList(1, names.size()));
    }

    boolean directoryHint() {
        return directoryHint;
    }

    @Override
    public S3FileSystem getFileSystem() {
        return fs;
    }

    @Override
    public boolean isAbsolute() {
        return absolute;
    }

    @Override
    public Path getRoot() {
        return absolute ? new S3Path(fs, true, List.of(), true) : null;
    }

    @Override
    public Path getFileName() {
        return names.isEmpty() ? null : new S3Path(fs, false, List.of(names.get(names.size() - 1)), false);
    }

    @Override
    public Path getParent() {
        if (names.isEmpty() || !absolute && names.size() == 1) {
            return null;
        }
        return new S3Path(fs, absolute, names.subList(0, names.size() - 1), true);
    }

    @Override
    public int getNameCount() {
        return names.size();
    }

    @Override
    public Path getName(int index) {
        return new S3Path(fs, false, List.of(names.get(index)), false);
    }

    @Override
    public Path subpath(int beginIndex, int endIndex) {
        return new S3Path(fs, false, names.subList(beginIndex, endIndex), false);
    }

    @Override
    public boolean startsWith(Path other) {
        if (!(other instanceof S3Path o) || o.fs != fs || o.absolute != absolute || o.names.size() > names.size()) {
            return false;
        }
        return names.subList(0, o.names.size()).equals(o.names);
    }

    @Override
    public boolean endsWith(Path other) {
        if (!(other instanceof S3Path o) || o.fs != fs || o.names.size() > names.size() || o.absolute && !absolute) {
            return false;
        }
        if (o.absolute) {
            return equals(o);
        }
        return names.subList(names.size() - o.names.size(), names.size()).equals(o.names);
    }

    @Override
    public Path normalize() {
        List<String> out = new ArrayList<>();
        for (String n : names) {
            if (n.equals(".")) {
                continue;
            }
            if (n.equals("..") && !out.isEmpty() && !out.get(out.size() - 1).equals("..")) {
                out.remove(out.size() - 1);
            } else if (n.equals("..") && absolute) {
                continue; // above the root is the root, as for a Unix path
            } else {
                out.add(n);
            }
        }
        return new S3Path(fs, absolute, out, directoryHint);
    }

    /**
     * Resolves a relative path of any provider by its names: an index lists its shards as plain
     * file names, which the loader turns into default-file-system paths before resolving them
     * against the model's directory.
     */
    @Override
    public Path resolve(Path other) {
        if (other instanceof S3Path o) {
            if (o.absolute) {
                return o;
            }
            List<String> all = new ArrayList<>(names);
            all.addAll(o.names);
            return new S3Path(fs, absolute, all, o.directoryHint);
        }
        if (other.isAbsolute()) {
            throw new ProviderMismatchException("cannot resolve the local path " + other + " against " + this);
        }
        List<String> all = new ArrayList<>(names);
        for (Path n : other) {
            String s = n.toString();
            if (!s.isEmpty()) {
                all.add(s);
            }
        }
        return new S3Path(fs, absolute, all, false);
    }

    @Override
    public Path resolve(String other) {
        if (other.isEmpty()) {
            return this;
        }
        if (other.regionMatches(true, 0, "s3://", 0, 5)) {
            return parse(fs, other);
        }
        List<String> all = new ArrayList<>(names);
        for (String n : other.split("/")) {
            if (!n.isEmpty()) {
                all.add(n);
            }
        }
        return new S3Path(fs, absolute, all, other.endsWith("/"));
    }

    @Override
    public Path relativize(Path other) {
        if (!(other instanceof S3Path o) || o.absolute != absolute) {
            throw new IllegalArgumentException("cannot relativize " + other + " against " + this);
        }
        int common = 0;
        while (common < names.size() && common < o.names.size() && names.get(common).equals(o.names.get(common))) {
            common++;
        }
        List<String> out = new ArrayList<>(Collections.nCopies(names.size() - common, ".."));
        out.addAll(o.names.subList(common, o.names.size()));
        return new S3Path(fs, false, out, false);
    }

    @Override
    public URI toUri() {
        try {
            return new URI("s3", bucket() == null ? "" : bucket(), "/" + key(), null);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A relative path has no working directory to start from in a bucket: it is taken from the root. */
    @Override
    public Path toAbsolutePath() {
        return absolute ? this : new S3Path(fs, true, names, directoryHint);
    }

    @Override
    public Path toRealPath(LinkOption... options) throws IOException {
        Path p = toAbsolutePath().normalize();
        fs.provider().checkAccess(p);
        return p;
    }

    @Override
    public WatchKey register(WatchService watcher, WatchEvent.Kind<?>[] events, WatchEvent.Modifier... modifiers) {
        throw new UnsupportedOperationException("S3 paths cannot be watched");
    }

    @Override
    public Iterator<Path> iterator() {
        List<Path> out = new ArrayList<>(names.size());
        for (String n : names) {
            out.add(new S3Path(fs, false, List.of(n), false));
        }
        return out.iterator();
    }

    @Override
    public int compareTo(Path other) {
        return toString().compareTo(other.toString());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof S3Path p && p.fs == fs && p.absolute == absolute && p.names.equals(names);
    }

    @Override
    public int hashCode() {
        return Objects.hash(absolute, names);
    }

    @Override
    public String toString() {
        String joined = String.join("/", names);
        return absolute ? "s3://" + joined : joined;
    }
}
