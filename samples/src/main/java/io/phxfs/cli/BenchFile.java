package io.phxfs.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.SplittableRandom;

/** The file a benchmark reads: generated once with incompressible bytes, then reused. */
final class BenchFile {
    private BenchFile() {}

    static Path ensure(Path dir, long size, Progress progress) throws IOException {
        Files.createDirectories(dir);
        Path file = dir.resolve("phoenix-bench-" + size + ".bin");
        if (Files.isRegularFile(file) && Files.size(file) == size) {
            progress.step("reusing %s (%s)", file, Sizes.format(size));
            return file;
        }
        Path tmp = dir.resolve(file.getFileName() + ".tmp");
        progress.step("writing %s of random bytes to %s", Sizes.format(size), file);
        Content content = new Content();
        byte[] block = new byte[Content.BLOCK];
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            long pos = 0;
            long next = size / 10;
            while (pos < size) {
                int n = (int) Math.min(block.length, size - pos);
                content.get(pos, block, n);
                ByteBuffer bb = ByteBuffer.wrap(block, 0, n);
                while (bb.hasRemaining()) pos += ch.write(bb, pos);
                if (pos >= next && pos < size) {
                    progress.step("  %d%%", pos * 100 / size);
                    next += size / 10;
                }
            }
        }
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        return file;
    }

    /**
     * What a generated file holds, at any offset: 4 random 8 MiB blocks, block i of the file
     * being block i % 4 rotated left by i * 4099 bytes (incompressible and fast to produce).
     * The benchmark checks what Phoenix read against this rather than against the file, so a
     * file changed after it was written shows as a failed verification.
     */
    static final class Content {
        static final int BLOCK = 8 << 20;
        private final byte[][] pool = new byte[4][BLOCK];

        Content() {
            SplittableRandom rnd = new SplittableRandom(0x5eed);
            for (byte[] b : pool) {
                for (int i = 0; i < b.length; i += 8) {
                    long v = rnd.nextLong();
                    for (int k = 0; k < 8; k++) b[i + k] = (byte) (v >>> (8 * k));
                }
            }
        }

        /** Bytes [pos, pos + n) of a generated file into dst[0, n). */
        void get(long pos, byte[] dst, int n) {
            for (int off = 0; off < n; ) {
                long i = pos / BLOCK;
                int j = (int) (pos % BLOCK);
                int at = (int) ((i * 4099 + j) % BLOCK);
                int k = Math.min(n - off, Math.min(BLOCK - j, BLOCK - at));
                System.arraycopy(pool[(int) (i % 4)], at, dst, off, k);
                pos += k;
                off += k;
            }
        }
    }
}
