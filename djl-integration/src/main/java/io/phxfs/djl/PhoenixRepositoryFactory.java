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

    @Override
    public Repository newInstance(String name, URI uri) {
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
