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
 * generation_config.json, tokenizer.json, every safetensors file's header, and samples of each
 * file's data (64 KiB at its start, middle and end): headers alone would not tell a fine-tune
 * from its base, which has the same names and shapes, while hashing every weight byte would
 * cost seconds per gigabyte at every start.
 */
final class ModelIdentity {
    private static final int SAMPLE = 64 << 10;

    private ModelIdentity() {
    }

    static String of(Path dir) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        for (String name : new String[] {"config.json", "generation_config.json", "tokenizer.json"}) {
            Path f = dir.resolve(name);
            md.update((name + "\0").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            if (Files.isRegularFile(f)) {
                md.update(Files.readAllBytes(f));
            }
        }
        for (Path f : ModelFiles.open(dir).files().stream().map(io.phxfs.safetensors.SafetensorsHeader::file).toList()) {
            md.update((f.getFileName() + "\0").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
                long size = ch.size();
                ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
                ch.read(len, 0);
                len.flip();
                long headerLen = len.remaining() == 8 ? len.getLong() : 0;
                long dataStart = Math.min(size, 8 + Math.max(0, headerLen));
                update(md, ch, 0, dataStart);
                long data = size - dataStart;
                update(md, ch, dataStart, Math.min(SAMPLE, data));
                update(md, ch, dataStart + data / 2, Math.min(SAMPLE, data - data / 2));
                update(md, ch, Math.max(dataStart, size - SAMPLE), Math.min(SAMPLE, data));
                md.update(ByteBuffer.allocate(8).putLong(0, size).array());
            }
        }
        return HexFormat.of().formatHex(md.digest());
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
