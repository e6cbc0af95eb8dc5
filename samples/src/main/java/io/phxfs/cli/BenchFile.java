package io.phxfs.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/** The file a benchmark reads: generated once with incompressible bytes, then reused. */
final class BenchFile {
    private BenchFile() {}

    static final String PREFIX = "phoenix-bench-";

    /** Where a generated file of {@code size} bytes is cached in {@code dir}. */
    static Path cached(Path dir, long size) {
        return dir.resolve(PREFIX + size + ".bin");
    }

    /**
     * The cached file of {@code size} bytes in {@code dir}, written first when missing. It is
     * kept for the next run on purpose (writing 1 GiB costs more than benchmarking it); the
     * half-written ".tmp" of an interrupted or failed write is not.
     */
    static Path ensure(Path dir, long size, Progress progress) throws IOException {
        Path file = cached(dir, size);
        if (Files.isRegularFile(file) && Files.size(file) == size) {
            progress.step("reusing %s (%s)", file, Sizes.format(size));
            return file;
        }
        Path tmp = TempFiles.track(dir.resolve(file.getFileName() + ".tmp"), Thread.currentThread());
        try {
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
        } catch (io.phxfs.core.FileOperationException e) {
            throw e;
        } catch (IOException e) {
            // a channel's write reports ENOSPC as the bare strerror text: name the file and errno
            throw io.phxfs.core.FileOperationException.of("write", tmp, e);
        } finally {
            TempFiles.delete(tmp); // gone already after the rename; a partial file after a failure
        }
        return file;
    }

    /** The cached files (and leftover ".tmp" files) in {@code dir}, which {@code bench --clean} deletes. */
    static List<Path> all(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> {
                String n = p.getFileName().toString();
                return n.startsWith(PREFIX) && (n.endsWith(".bin") || n.endsWith(".bin.tmp")) && Files.isRegularFile(p);
            }).sorted().toList();
        }
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
