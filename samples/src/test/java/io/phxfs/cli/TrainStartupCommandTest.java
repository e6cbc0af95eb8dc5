package io.phxfs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The launcher's AOT training run must succeed on any machine and leave nothing behind. */
class TrainStartupCommandTest {
    @Test
    void runsTheMainPathsAndCleansUp() throws IOException {
        Set<Path> before = trainDirs();
        Cli r = Cli.run("train-startup");
        assertEquals(0, r.exit(), r.toString());
        assertEquals("", r.out(), r.toString());
        assertEquals(before, trainDirs(), "temporary model left behind");
    }

    private static Set<Path> trainDirs() throws IOException {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return s.filter(p -> p.getFileName().toString().startsWith("phoenix-train")).collect(Collectors.toSet());
        }
    }
}
