package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The mutation property of {@link MutationTest} under jqwik (1.9.x, plain EPL-2.0): jqwik
 * draws which valid file to start from and the mutation's random stream, and shrinks a
 * failing case to a small one. The only failure a mutant may cause is the format exception.
 */
class MutationPropertyTest {
    private static Path dir;
    private static List<byte[]> seeds;
    private static final AtomicLong n = new AtomicLong();

    @BeforeContainer
    static void seeds() throws IOException {
        dir = Files.createTempDirectory("phx-jqwik-mutants");
        seeds = MutationTest.validFiles(dir);
    }

    @AfterContainer
    static void cleanUp() throws IOException {
        TempDirs.delete(dir);
    }

    @Property(tries = 1000, seed = "20261130")
    void onlyFormatExceptionsEscape(@ForAll @IntRange(min = 0, max = 2) int file, @ForAll long stream) throws IOException {
        WeightLoader loader = WeightLoader.builder().toHost().build();
        long id = n.incrementAndGet();
        MutationTest.checkMutant(seeds.get(file), new SplittableRandom(stream), loader, dir.resolve("p" + id + ".safetensors"),
                "jqwik try " + id + " (file " + file + ", stream " + stream + ")");
    }
}
