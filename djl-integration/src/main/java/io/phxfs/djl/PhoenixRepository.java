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
 * each overridable by the {@code Criteria}.
 */
final class PhoenixRepository extends SimpleRepository {
    PhoenixRepository(String name, URI uri, Path dir) {
        super(name, uri, dir);
    }

    @Override
    public Metadata locate(MRL mrl) throws IOException {
        Metadata m = super.locate(mrl);
        for (Artifact a : m.getArtifacts()) {
            Map<String, Object> args = a.getArguments();
            args.putIfAbsent("engine", DjlRuntime.ENGINE);
            args.putIfAbsent("blockFactory", PhoenixBlockFactory.class.getName());
            args.putIfAbsent("translatorFactory", PhoenixTranslatorFactory.class.getName());
            Map<String, String> options = new HashMap<>(a.getOptions(null));
            options.putIfAbsent("hasParameter", "false");
            a.setOptions(options);
        }
        return m;
    }
}
