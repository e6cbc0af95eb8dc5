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
        ByteBuffer block = ByteBuffer.allocateDirect(8 << 20);
        SplittableRandom rnd = new SplittableRandom(0x5eed);
        // 4 random blocks rotated with a per-block offset: incompressible and fast to produce
        byte[][] pool = new byte[4][8 << 20];
        for (byte[] b : pool) {
            for (int i = 0; i < b.length; i += 8) {
                long v = rnd.nextLong();
                for (int k = 0; k < 8; k++) b[i + k] = (byte) (v >>> (8 * k));
            }
        }
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            long pos = 0;
            long next = size / 10;
            int i = 0;
            while (pos < size) {
                block.clear();
                byte[] src = pool[i % 4];
                int rot = (i * 4099) % src.length;
                block.put(src, rot, src.length - rot).put(src, 0, rot).flip();
                block.limit((int) Math.min(block.limit(), size - pos));
                while (block.hasRemaining()) pos += ch.write(block, pos);
                i++;
                if (pos >= next && pos < size) {
                    progress.step("  %d%%", pos * 100 / size);
                    next += size / 10;
                }
            }
        }
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        return file;
    }
}
