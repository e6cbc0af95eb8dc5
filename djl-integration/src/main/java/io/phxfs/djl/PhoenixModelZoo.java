package io.phxfs.djl;

import ai.djl.Application;
import ai.djl.repository.MRL;
import ai.djl.repository.zoo.BaseModelLoader;
import ai.djl.repository.zoo.ModelLoader;
import ai.djl.repository.zoo.ModelZoo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The {@code phoenix} model zoo (group id {@value #GROUP_ID}): every Hugging Face checkpoint
 * directory (one with a config.json) directly under the directory named by the system
 * property {@value #MODELS_PROPERTY} or the environment variable {@value #MODELS_ENV}, as a
 * model whose artifact id is the directory's name. Empty when neither is set.
 *
 * <pre>{@code
 * Criteria.builder().setTypes(long[].class, float[].class)
 *         .optGroupId(PhoenixModelZoo.GROUP_ID).optArtifactId("tiny-gpt2").build();
 * }</pre>
 */
public final class PhoenixModelZoo extends ModelZoo {
    /** The zoo's group id. */
    public static final String GROUP_ID = "io.phxfs.phoenix";
    /** System property naming the models' directory. */
    public static final String MODELS_PROPERTY = "phoenix.djl.models";
    /** Environment variable naming the models' directory (the property wins). */
    public static final String MODELS_ENV = "PHOENIX_DJL_MODELS";

    /** The zoo; ServiceLoader finds it through {@link PhoenixZooProvider}. */
    public PhoenixModelZoo() {
    }

    @Override
    public String getGroupId() {
        return GROUP_ID;
    }

    @Override
    public Set<String> getSupportedEngines() {
        return Set.of(DjlRuntime.ENGINE);
    }

    /** Listed afresh at each call, so that the directory may change while the JVM runs. */
    @Override
    public Collection<ModelLoader> getModelLoaders() {
        String root = System.getProperty(MODELS_PROPERTY, System.getenv(MODELS_ENV));
        if (root == null || root.isBlank()) {
            return List.of();
        }
        Path dir = Path.of(root);
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(MODELS_PROPERTY + "/" + MODELS_ENV + " = " + root + ": not a directory");
        }
        List<ModelLoader> loaders = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.sorted().toList()) {
                if (Files.isRegularFile(p.resolve("config.json"))) {
                    PhoenixRepository repo = new PhoenixRepository(p.getFileName().toString(), p.toUri(), p);
                    MRL mrl = repo.model(Application.UNDEFINED, GROUP_ID, p.getFileName().toString());
                    loaders.add(new BaseModelLoader(mrl));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(dir + ": " + e.getMessage(), e);
        }
        return loaders;
    }

    @Override
    public ModelLoader getModelLoader(String name) {
        return getModelLoaders().stream().filter(l -> l.getArtifactId().equals(name)).findFirst().orElse(null);
    }
}
