package io.phxfs.serving.engine;

import io.phxfs.safetensors.ModelFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The checkpoint's identity in the prefix-cache keys: KV computed by one model must never be
 * served to another (the most common defect in LMCache's tracker). A SHA-256 over config.json,
 * generation_config.json, tokenizer.json, every safetensors file's header and size, and, for
 * every tensor, 4 KiB at its start, middle and end: headers alone would not tell a fine-tune
 * from its base (same names and shapes), and a merged adapter changes some tensors only, so
 * every tensor is sampled; hashing every weight byte would cost seconds per gigabyte at each
 * start. A change that spares all three samples of every tensor it touches goes unseen.
 *
 * <p>A checkpoint in S3 is digested from its objects themselves (the small files as copied
 * from the bucket, the safetensors' headers and sizes read from the bucket), and each
 * safetensors object's entity tag stands in for the samples: the server's own digest of the
 * object (its MD5, or the MD5 of its parts' for a multipart upload), which changes with any
 * byte of it, costs no request beyond the header's GET, where 3 ranged GETs per tensor would
 * cost seconds. An object without an entity tag is sampled as a file is. The load then checks
 * each object against the entity tag it read (If-Match), so that one replaced after the
 * digest within the file system's cache time fails the load instead of serving new weights
 * under the old identity.
 */
final class ModelIdentity {
    private static final int SAMPLE = 4 << 10;

    private ModelIdentity() {
    }

    static String of(Path dir) throws IOException {
        return of(dir, dir);
    }

    /**
     * The identity of a checkpoint whose small files are in {@code files} and whose weights are in {@code weights}.
     *
     * @param files a local directory with config.json, generation_config.json and tokenizer.json
     * @param weights the checkpoint directory or S3 prefix holding the safetensors
     * @return the hex SHA-256
     * @throws IOException when a file cannot be read
     */
    static String of(Path files, Path weights) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        for (String name : new String[] {"config.json", "generation_config.json", "tokenizer.json"}) {
            Path f = files.resolve(name);
            md.update((name + "\0").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            if (Files.isRegularFile(f)) {
                md.update(Files.readAllBytes(f));
            }
        }
        for (Path f : ModelFiles.open(weights).files().stream().map(io.phxfs.safetensors.SafetensorsHeader::file).toList()) {
            md.update((f.getFileName() + "\0").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
                long size = ch.size();
                ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
                ch.read(len, 0);
                len.flip();
                long headerLen = len.remaining() == 8 ? len.getLong() : 0;
                long dataStart = Math.min(size, 8 + Math.max(0, headerLen));
                update(md, ch, 0, dataStart);
                md.update(ByteBuffer.allocate(8).putLong(0, size).array());
                String etag = io.phxfs.safetensors.s3.S3FileSystemProvider.isS3(f)
                        ? (String) Files.readAttributes(f, java.nio.file.attribute.BasicFileAttributes.class).fileKey() : null;
                if (etag != null) {
                    md.update(("etag\0" + etag).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    continue;
                }
                for (long[] t : tensorRanges(f)) {
                    long from = dataStart + t[0];
                    long n = t[1] - t[0];
                    update(md, ch, from, Math.min(SAMPLE, n));
                    update(md, ch, from + n / 2, Math.min(SAMPLE, n - n / 2));
                    update(md, ch, from + Math.max(0, n - SAMPLE), Math.min(SAMPLE, n));
                }
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /** Each tensor's data offsets [begin, end) within the file's data, in file order. */
    private static java.util.List<long[]> tensorRanges(Path f) throws IOException {
        io.phxfs.safetensors.SafetensorsHeader h = io.phxfs.safetensors.SafetensorsParser.standard().parse(f);
        java.util.List<long[]> out = new java.util.ArrayList<>();
        for (io.phxfs.safetensors.TensorInfo t : h.tensors()) {
            long begin = h.fileOffset(t) - h.dataStart();
            out.add(new long[] {begin, begin + t.nbytes()});
        }
        out.sort(java.util.Comparator.comparingLong(r -> r[0]));
        return out;
    }

    private static void update(MessageDigest md, FileChannel ch, long at, long n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate((int) Math.min(n, 1 << 20));
        long done = 0;
        while (done < n) {
            b.clear().limit((int) Math.min(b.capacity(), n - done));
            int r = ch.read(b, at + done);
            if (r <= 0) {
                break;
            }
            b.flip();
            md.update(b);
            done += r;
        }
    }
}
