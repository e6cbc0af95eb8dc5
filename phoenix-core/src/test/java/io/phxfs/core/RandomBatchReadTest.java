package io.phxfs.core;

import java.io.IOException;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static io.phxfs.core.Fixtures.PHX;
import static io.phxfs.core.Fixtures.dev0;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Reads at arbitrary offsets and lengths, buffered or O_DIRECT, sync or async, host or device
 * memory, deliver exactly the file's bytes. The cases come from a fixed seed so that a failure
 * names a case that reproduces.
 */
@Tag("io")
class RandomBatchReadTest {
    private static final int FILE_SIZE = 1 << 20;
    private static final int BUF_SIZE = 256 * 1024;
    private static final long SEED = 0x5eed_f11eL;

    @TempDir
    static Path dir;

    private static byte[] data;
    private static PhxFile file;
    private static PhxFile directFile;
    private static RegisteredBuffer host;
    private static RegisteredBuffer dev;

    record Req(int n, boolean onDevice, boolean direct, boolean async, int bufOffset, int length, int fileOffset) {
    }

    static Stream<Req> cases() {
        SplittableRandom r = new SplittableRandom(SEED);
        return Stream.iterate(0, i -> i + 1).limit(48).map(i -> {
            int bufOffset = i % 6 == 0 ? 0 : r.nextInt(BUF_SIZE);
            int length = i % 8 == 1 ? 0 : Math.min(r.nextInt(70_000), BUF_SIZE - bufOffset);
            // Some requests start at, past or just before the end of the file.
            int fileOffset = switch (i % 7) {
                case 0 -> FILE_SIZE - r.nextInt(5000);
                case 1 -> FILE_SIZE + r.nextInt(100);
                default -> r.nextInt(FILE_SIZE);
            };
            return new Req(i, (i & 1) == 0, (i & 2) == 0, (i & 4) == 0, bufOffset, length, fileOffset);
        });
    }

    @BeforeAll
    static void setUp() throws IOException {
        data = Fixtures.random(FILE_SIZE, SEED);
        Path p = Fixtures.writeFile(dir, "data.bin", data);
        file = PhxFile.open(p);
        directFile = PhxFile.open(p, OpenMode.READ, OpenMode.DIRECT);
        host = PHX.host().allocate(BUF_SIZE);
        dev = dev0().allocate(BUF_SIZE);
    }

    @AfterAll
    static void tearDown() {
        host.close();
        dev.close();
        file.close();
        directFile.close();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void batchReadsMatchTheFile(Req r) throws Exception {
        RegisteredBuffer buf = r.onDevice() ? dev : host;
        try (IoBatch batch = IoBatch.create(1)) {
            batch.add(IoRequest.read(r.direct() ? directFile : file, r.fileOffset(), buf, r.bufOffset(), r.length()));
            BatchResult result = r.async() ? batch.submit().get() : batch.run();
            long expected = Math.max(0, Math.min(r.length(), FILE_SIZE - (long) r.fileOffset()));
            assertEquals(expected, result.result(0), r + " " + result);
            if (expected > 0) {
                Fixtures.assertBytes(data, r.fileOffset(), Fixtures.contents(buf, r.bufOffset(), (int) expected),
                        r.toString());
            }
        }
    }
}
