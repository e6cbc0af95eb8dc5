package io.phxfs.serving.engine;

import io.phxfs.safetensors.s3.S3FileSystemProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A checkpoint's small files (config.json, generation_config.json, tokenizer.json,
 * tokenizer_config.json, special_tokens_map.json, chat_template.jinja...) where the tokenizer
 * and the template loader can read them: DJL's native tokenizer and the template loader read
 * local files only. A local checkpoint directory is used as it is. A checkpoint in S3
 * ({@code s3://bucket/prefix/}) has every object directly under its prefix except the weights
 * (safetensors and the other weight formats of {@link #WEIGHT_SUFFIXES}) copied once into a
 * private temporary directory (0700), deleted by {@link #close}; each object may be at most
 * {@link #MAX_FILE_BYTES}, so that a stray blob is refused naming it rather than filling the
 * disk. The weights themselves are never copied: they load from S3 through a
 * {@code phoenix:s3://} model URL.
 */
final class CheckpointFiles implements AutoCloseable {
    /** The most bytes one small file may have: 256 MiB. */
    static final long MAX_FILE_BYTES = 256L << 20;

    /** Names ending so are weights, never copied. */
    static final List<String> WEIGHT_SUFFIXES = List.of(".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf",
            ".h5", ".msgpack", ".onnx", ".pb", ".tflite", ".params", ".npz", ".ot");

    private final Path checkpoint;
    private final Path local;
    private final boolean owned;
    private boolean closed;

    private CheckpointFiles(Path checkpoint, Path local, boolean owned) {
        this.checkpoint = checkpoint;
        this.local = local;
        this.owned = owned;
    }

    /**
     * Whether a checkpoint is remote (its small files are copied).
     *
     * @param checkpoint a checkpoint directory
     * @return true for an S3 path
     */
    static boolean isRemote(Path checkpoint) {
        return S3FileSystemProvider.isS3(checkpoint);
    }

    /**
     * The small files of a checkpoint: a local directory itself, an S3 prefix's copied.
     *
     * @param checkpoint a local checkpoint directory or an S3 path
     * @return the files; close it to delete a copy
     * @throws IOException when S3 refuses (no such bucket or prefix, 403) or a copy fails; the
     *         message names the object's URL
     */
    static CheckpointFiles open(Path checkpoint) throws IOException {
        return open(checkpoint, MAX_FILE_BYTES);
    }

    static CheckpointFiles open(Path checkpoint, long maxFileBytes) throws IOException {
        if (!isRemote(checkpoint)) {
            return new CheckpointFiles(checkpoint, checkpoint, false);
        }
        // S3's own error (404 NoSuchBucket, 403...) naming the URL, not a bare "not a directory"
        BasicFileAttributes a = Files.readAttributes(checkpoint, BasicFileAttributes.class);
        if (!a.isDirectory()) {
            throw new IllegalArgumentException(checkpoint + ": an object, not a prefix (serve takes a checkpoint: "
                    + "s3://bucket/prefix/ holding config.json, the safetensors and the tokenizer)");
        }
        List<Path> objects = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(checkpoint)) {
            for (Path p : s) {
                String name = p.getFileName() == null ? "" : p.getFileName().toString();
                // "." and ".." are legal S3 keys; resolved locally they would leave the copy's directory
                if (!name.isEmpty() && !name.equals(".") && !name.equals("..") && !name.contains("/")
                        && !isWeights(name) && Files.isRegularFile(p)) {
                    objects.add(p);
                }
            }
        }
        Path dir = Files.createTempDirectory("phoenix-checkpoint-",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        CheckpointFiles files = new CheckpointFiles(checkpoint, dir, true);
        try {
            for (Path p : objects) {
                copy(p, dir.resolve(p.getFileName().toString()), maxFileBytes);
            }
        } catch (IOException | RuntimeException e) {
            files.close();
            throw e;
        }
        return files;
    }

    static boolean isWeights(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        for (String s : WEIGHT_SUFFIXES) {
            if (n.endsWith(s)) {
                return true;
            }
        }
        return false;
    }

    private static void copy(Path from, Path to, long max) throws IOException {
        long size = Files.size(from);
        if (size > max) {
            throw new IOException(from + ": " + size + " bytes, over the " + bytes(max) + " a checkpoint's small file"
                    + " may have (only the weights, *.safetensors, are loaded from S3 without a local copy)");
        }
        // one ranged GET per read call on an S3 channel: large reads, not an InputStream's 8 KiB
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate((int) Math.max(1, Math.min(size + 1, 8 << 20)));
        long done = 0;
        try (java.nio.channels.SeekableByteChannel in = Files.newByteChannel(from);
             java.nio.channels.FileChannel out = java.nio.channels.FileChannel.open(to, StandardOpenOption.CREATE_NEW,
                     StandardOpenOption.WRITE)) {
            while (in.read(buf.clear()) > 0) {
                done += buf.flip().remaining();
                if (done > max) {
                    throw new IOException(from + ": more than " + bytes(max) + " (the object grew while copied)");
                }
                while (buf.hasRemaining()) {
                    out.write(buf);
                }
            }
        } catch (IOException e) {
            if (e.getMessage() != null && e.getMessage().contains(from.toString())) {
                throw e;
            }
            throw new IOException(from + ": copying to " + to + ": " + e.getMessage(), e);
        }
    }

    private static String bytes(long n) {
        return n >= 1 << 20 && n % (1 << 20) == 0 ? (n >> 20) + " MiB" : n + " bytes";
    }

    /**
     * The checkpoint as given: the weights are read from here.
     *
     * @return the local directory or S3 path
     */
    Path checkpoint() {
        return checkpoint;
    }

    /**
     * The DJL model URL of the checkpoint: {@code phoenix:s3://bucket/prefix} (characters a URI
     * cannot hold percent-encoded; DJL's repository decodes them), or {@code phoenix:///dir}.
     *
     * @return the URL
     */
    String modelUrl() {
        if (!isRemote(checkpoint)) {
            return "phoenix://" + checkpoint;
        }
        try {
            return new java.net.URI("phoenix", checkpoint.toString(), null).toASCIIString();
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException(checkpoint + ": not a URL DJL can take: " + e.getMessage(), e);
        }
    }

    /**
     * A local directory with the checkpoint's small files.
     *
     * @return the checkpoint itself, or the private copy of an S3 checkpoint's
     */
    Path dir() {
        return local;
    }

    /**
     * {@code e}, its message naming the checkpoint's object rather than the local copy
     * ({@code s3://bucket/prefix/tokenizer.json}, not {@code /tmp/phoenix-checkpoint-.../tokenizer.json}).
     *
     * @param e an error of reading the small files
     * @return e, or an exception of its kind with the message rewritten and e as its cause
     */
    IOException named(IOException e) {
        String m = rewrite(e.getMessage());
        if (m == null) {
            return e;
        }
        IOException n = e instanceof java.nio.file.NoSuchFileException ? new java.nio.file.NoSuchFileException(m)
                : new IOException(m);
        n.initCause(e);
        return n;
    }

    /**
     * {@code e}, its message naming the checkpoint's object rather than the local copy.
     *
     * @param e an error of reading the small files
     * @return e, or an IllegalArgumentException or IllegalStateException with the message rewritten
     */
    RuntimeException named(RuntimeException e) {
        String m = rewrite(e.getMessage());
        if (m == null) {
            return e;
        }
        if (e instanceof IllegalArgumentException) {
            return new IllegalArgumentException(m, e);
        }
        return e instanceof IllegalStateException ? new IllegalStateException(m, e) : e;
    }

    private String rewrite(String message) {
        if (!owned || message == null || !message.contains(local.toString())) {
            return null;
        }
        String url = checkpoint.toString().replaceAll("/+$", "");
        return message.replace(local.toString(), url);
    }

    /** Deletes a copy (a local checkpoint is left alone); a second call does nothing. */
    @Override
    public synchronized void close() {
        if (closed || !owned) {
            closed = true;
            return;
        }
        closed = true;
        try {
            Files.walkFileTree(local, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(f);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                    Files.deleteIfExists(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(local + ": deleting the copy of " + checkpoint + "'s small files", e);
        }
    }

    @Override
    public String toString() {
        return owned ? checkpoint + " (small files in " + local + ")" : checkpoint.toString();
    }

    /** The names of the small files an S3 checkpoint's copy holds, for tests. */
    Set<String> names() throws IOException {
        try (var s = Files.list(local)) {
            return Set.copyOf(s.map(p -> p.getFileName().toString()).toList());
        }
    }
}
