package io.phxfs.djl;

import ai.djl.repository.Repository;
import ai.djl.repository.RepositoryFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

/**
 * The {@code phoenix} URL scheme of DJL model URLs, registered through ServiceLoader:
 * {@code phoenix:///abs/path/to/checkpoint} (or {@code phoenix:relative/path}) names a Hugging
 * Face checkpoint directory that Phoenix loads (see {@link PhoenixRepository}).
 *
 * <p>{@code phoenix:s3://bucket/prefix/} (an opaque URI whose scheme-specific part is the
 * checkpoint's {@code s3://} URL, as {@code phoenix load} takes it) names a checkpoint in
 * S3-compatible storage, reached with the settings of the environment
 * ({@code S3Settings.fromEnvironment()}: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_REGION...):
 * {@link PhoenixBlockFactory} reads its config.json and, through {@code WeightLoader}, its
 * safetensors straight from the bucket (parallel ranged GETs, no local copy). DJL's PyTorch
 * engine needs a local model directory all the same; the model's is an empty private
 * placeholder (0700, one per process, deleted at its exit), and the checkpoint travels as the artifact's
 * {@link PhoenixBlockFactory#CHECKPOINT} argument, which a {@code Criteria} may override with a
 * {@code Path} of a file system of its own ({@code S3FileSystem.open(settings)}). Nothing is
 * requested from S3 until the model loads; a missing bucket or key, or a refused request,
 * then fails the load with an IOException naming the object's URL. The URL is not split
 * further: no query arguments, and no commas (DJL splits model URLs at commas).
 */
public final class PhoenixRepositoryFactory implements RepositoryFactory {
    /** The URL scheme. */
    public static final String SCHEME = "phoenix";

    /** A factory; ServiceLoader instantiates it. */
    public PhoenixRepositoryFactory() {
    }

    /**
     * The checkpoint directory a {@code phoenix:} URL names.
     *
     * @param uri a phoenix URL
     * @return the directory's path
     */
    static Path path(URI uri) {
        if (!SCHEME.equals(uri.getScheme())) {
            throw new IllegalArgumentException(uri + ": not a " + SCHEME + ": URL");
        }
        String p;
        if (uri.isOpaque()) {
            p = uri.getSchemeSpecificPart();
        } else {
            String auth = uri.getAuthority();
            p = (auth == null || auth.isEmpty()) ? uri.getPath() : auth + uri.getPath();
        }
        if (p == null || p.isEmpty()) {
            throw new IllegalArgumentException(uri + ": no checkpoint directory in the URL");
        }
        return Path.of(p);
    }

    /**
     * The {@code s3://} URL of a {@code phoenix:s3://bucket/prefix/} URL.
     *
     * @param uri a phoenix URL
     * @return its S3 URL, or null when it names a local directory
     */
    static String s3Url(URI uri) {
        if (!SCHEME.equals(uri.getScheme()) || !uri.isOpaque()) {
            return null;
        }
        String ssp = uri.getSchemeSpecificPart();
        return ssp != null && ssp.regionMatches(true, 0, "s3://", 0, 5) ? ssp : null;
    }

    private static volatile Path placeholder;

    /**
     * The local model directory of every {@code phoenix:s3://} model: empty, private (0700),
     * made once per process and deleted at its exit. DJL's PyTorch engine takes a model's
     * directory as a local file; nothing is ever written into this one, and being private no
     * other user can plant a serving.properties or classes in it.
     *
     * @return the directory
     */
    static synchronized Path placeholder() {
        Path p = placeholder;
        if (p == null || !Files.isDirectory(p)) {
            try {
                p = java.nio.file.Files.createTempDirectory("phoenix-s3-",
                        java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                                java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException("a local placeholder directory for phoenix:s3:// models", e);
            }
            p.toFile().deleteOnExit();
            placeholder = p;
        }
        return p;
    }

    @Override
    public Repository newInstance(String name, URI uri) {
        String s3 = s3Url(uri);
        if (s3 != null) {
            String trimmed = s3.replaceAll("/+$", "");
            if (trimmed.length() <= "s3://".length() || s3.contains("?")) {
                throw new IllegalArgumentException(uri + ": phoenix:s3://bucket/prefix/ names a checkpoint in a bucket"
                        + " (no query arguments)");
            }
            String artifact = trimmed.substring(trimmed.lastIndexOf('/') + 1);
            return new PhoenixRepository(name, uri, placeholder(), s3, artifact);
        }
        Path dir = path(uri);
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(uri + ": " + dir + (Files.exists(dir) ? " is not a directory"
                    : " does not exist") + " (a phoenix: URL names a Hugging Face checkpoint directory)");
        }
        return new PhoenixRepository(name, uri, dir);
    }

    @Override
    public Set<String> getSupportedScheme() {
        return Set.of(SCHEME);
    }
}
