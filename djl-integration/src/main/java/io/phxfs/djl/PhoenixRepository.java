package io.phxfs.djl;

import ai.djl.repository.Artifact;
import ai.djl.repository.MRL;
import ai.djl.repository.Metadata;
import ai.djl.repository.SimpleRepository;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A Hugging Face checkpoint directory as a DJL repository whose one artifact loads through
 * Phoenix: the artifact carries the PyTorch engine, {@link PhoenixBlockFactory},
 * {@link PhoenixTranslatorFactory} and {@code hasParameter=false} (no {@code .params} files),
 * each overridable by the {@code Criteria}. A checkpoint in S3 ({@code phoenix:s3://}) is a
 * repository over {@link PhoenixRepositoryFactory#placeholder()} whose artifact also carries
 * {@link PhoenixBlockFactory#CHECKPOINT}, the checkpoint's s3:// URL, and its prefix's name.
 */
final class PhoenixRepository extends SimpleRepository {
    private final String checkpoint;
    private final String artifactName;

    PhoenixRepository(String name, URI uri, Path dir) {
        this(name, uri, dir, null, null);
    }

    PhoenixRepository(String name, URI uri, Path dir, String checkpoint, String artifactName) {
        super(name, uri, dir);
        this.checkpoint = checkpoint;
        this.artifactName = artifactName;
    }

    @Override
    public Metadata locate(MRL mrl) throws IOException {
        Metadata m = super.locate(mrl);
        for (Artifact a : m.getArtifacts()) {
            Map<String, Object> args = a.getArguments();
            args.putIfAbsent("engine", DjlRuntime.ENGINE);
            args.putIfAbsent("blockFactory", PhoenixBlockFactory.class.getName());
            args.putIfAbsent("translatorFactory", PhoenixTranslatorFactory.class.getName());
            if (checkpoint != null) {
                args.putIfAbsent(PhoenixBlockFactory.CHECKPOINT, checkpoint);
                a.setName(artifactName);
            }
            Map<String, String> options = new HashMap<>(a.getOptions(null));
            options.putIfAbsent("hasParameter", "false");
            a.setOptions(options);
        }
        return m;
    }
}
